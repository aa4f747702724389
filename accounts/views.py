"""Pages of the accounts app: login, password reset and change, accepting an invitation.

There is no public sign-up: staff create businesses (``create_business`` or the admin), and
owners invite their members (``services.member_invite``).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import REDIRECT_FIELD_NAME, login
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import SetPasswordForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import resolve_url
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters

from core.ratelimit import client_network
from core.ratelimit_store import StoreUnavailable
from core.security import strict_page

from . import services, tasks, throttle
from .models import User

logger = logging.getLogger(__name__)

TOO_MANY_RESETS = (
    "Too many reset requests for this address or from your network. Please try again in an "
    "hour, and check your spam folder for the e-mails already sent."
)


class LoginView(auth_views.LoginView):
    """Django's login, behind the login throttle (``accounts.throttle``)."""

    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        email = request.POST.get("username", "")
        attempt = throttle.LoginAttempt(request, email)
        if attempt.locked:
            # The password is not even checked: a throttled guess learns nothing.
            form = self.form_class(request, initial={"username": email[:254]})
            context = self.get_context_data(form=form, login_error=attempt.message)
            return self.render_to_response(context, status=429)
        return attempt.finish(super().post(request, *args, **kwargs))


@never_cache
def admin_login(request: HttpRequest) -> HttpResponse:
    """The admin's login page (``/admin/login/``), behind the same throttle as the owners'."""
    if request.method != "POST":
        return admin.site.login(request)
    email = request.POST.get("username", "")
    attempt = throttle.LoginAttempt(request, email)
    if not attempt.locked:
        return attempt.finish(admin.site.login(request))
    context = {
        **admin.site.each_context(request),
        "title": _("Log in"),
        "subtitle": None,
        "app_path": request.get_full_path(),
        "username": request.user.get_username(),
        "form": AdminAuthenticationForm(request, initial={"username": email[:254]}),
        REDIRECT_FIELD_NAME: request.POST.get(REDIRECT_FIELD_NAME) or reverse("admin:index"),
        "login_error": attempt.message,
    }
    return TemplateResponse(request, "admin/login_locked.html", context, status=429)


@method_decorator(strict_page, name="dispatch")
class PasswordResetView(auth_views.PasswordResetView):
    """Ask for a reset link. The answer is the same whether or not the address has an account:
    the page does the same work for any address (it hands it to a worker and answers at once),
    and the worker looks the owner up and sends the e-mail (``accounts.tasks``), so neither the
    page nor its timing says whether an account exists (sending through an ESP takes long
    enough to be measured)."""

    template_name = "registration/password_reset_form.html"

    def form_valid(self, form) -> HttpResponse:
        email = form.cleaned_data["email"]
        if not throttle.password_reset_allowed(self.request, email):
            form.add_error("email", TOO_MANY_RESETS)
            return self.render_to_response(self.get_context_data(form=form), status=429)
        try:
            tasks.send_password_reset_email.apply_async(args=(email,), retry=False)
        except Exception:  # the broker refused the task: say so rather than pretend
            logger.warning("password reset e-mail not queued", exc_info=True)
            form.add_error(None, "We cannot send e-mail just now. Please try again in a minute.")
            return self.render_to_response(self.get_context_data(form=form), status=503)
        return HttpResponseRedirect(self.get_success_url())


@method_decorator(strict_page, name="dispatch")
class PasswordResetDoneView(auth_views.PasswordResetDoneView):
    pass


@method_decorator(strict_page, name="dispatch")
class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    """Setting a new password through the link also lifts the login lock of that address on
    the network it was set from (the lock page says to reset the password)."""

    def form_valid(self, form) -> HttpResponse:
        response = super().form_valid(form)
        try:
            throttle.login_unlock(email=form.user.email, network=client_network(self.request))
        except StoreUnavailable:
            logger.warning("login lock not lifted after a password reset", exc_info=True)
        return response


@method_decorator(strict_page, name="dispatch")
class PasswordResetCompleteView(auth_views.PasswordResetCompleteView):
    pass


@method_decorator(strict_page, name="dispatch")
class PasswordChangeView(auth_views.PasswordChangeView):
    extra_context = {"section": "settings", "tab": "password"}


@method_decorator(strict_page, name="dispatch")
class PasswordChangeDoneView(auth_views.PasswordChangeDoneView):
    extra_context = {"section": "settings", "tab": "password"}


@strict_page
@sensitive_post_parameters("new_password1", "new_password2")
def invitation_accept(request: HttpRequest, token: str) -> HttpResponse:
    """``/accounts/invitation/<token>/``: the invited person chooses a password (twice, checked
    by the password validators), becomes a member, is logged in and goes to the portal. A link
    that cannot be used says why (410; 404 for one that was never ours)."""
    try:
        invitation = services.invitation_pending(token=token)
    except services.InvitationUnusable as exc:
        status = 404 if exc.code == "invalid" else 410
        return TemplateResponse(
            request, "registration/invitation_accept.html", {"reason": str(exc)}, status=status
        )
    # An unsaved user with the invitation's address: what the validators compare against.
    form = SetPasswordForm(User(email=invitation.email), request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            member = services.invitation_accept(
                token=token, password=form.cleaned_data["new_password1"]
            )
        except services.InvitationUnusable as exc:
            return TemplateResponse(
                request, "registration/invitation_accept.html", {"reason": str(exc)}, status=410
            )
        except ValidationError as exc:
            form.add_error(None, exc.messages)
        else:
            login(request, member, backend=settings.AUTHENTICATION_BACKENDS[0])
            return HttpResponseRedirect(resolve_url(settings.LOGIN_REDIRECT_URL))
    context: dict[str, object] = {
        "invitation": invitation,
        "form": form,
        "business_name": invitation.account.display_name,
        "role": invitation.get_role_display().lower(),
    }
    return TemplateResponse(request, "registration/invitation_accept.html", context)
