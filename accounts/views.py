"""Pages of the accounts app: login, password reset and change.

There is no public sign-up: staff create businesses (``create_business`` or the admin).
"""

from __future__ import annotations

import logging

from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils.decorators import method_decorator

from core.security import strict_page

from . import tasks, throttle

logger = logging.getLogger(__name__)

TOO_MANY_LOGINS = "Too many login attempts. Wait a while and try again, or reset your password."
TOO_MANY_RESETS = (
    "Too many reset requests for this address or from your network. Please try again in an "
    "hour, and check your spam folder for the e-mails already sent."
)


class LoginView(auth_views.LoginView):
    """Django's login, limited per address and network (``accounts.throttle``)."""

    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        email = request.POST.get("username", "")
        if not throttle.login_allowed(request, email):
            # The password is not even checked: a throttled guess learns nothing.
            form = self.form_class(request, initial={"username": email[:254]})
            context = self.get_context_data(form=form, login_error=TOO_MANY_LOGINS)
            return self.render_to_response(context, status=429)
        return super().post(request, *args, **kwargs)


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
            tasks.send_password_reset_email.apply_async(args=[email], retry=False)
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
    pass


@method_decorator(strict_page, name="dispatch")
class PasswordResetCompleteView(auth_views.PasswordResetCompleteView):
    pass


@method_decorator(strict_page, name="dispatch")
class PasswordChangeView(auth_views.PasswordChangeView):
    extra_context = {"section": "settings", "tab": "password"}


@method_decorator(strict_page, name="dispatch")
class PasswordChangeDoneView(auth_views.PasswordChangeDoneView):
    extra_context = {"section": "settings", "tab": "password"}
