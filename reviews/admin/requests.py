"""Review requests, their messages, and what contacts did (clicks, feedback, opt-outs)."""

from __future__ import annotations

import contextlib
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.mail import get_connection
from django.db.models import BooleanField, Case, Q, Value, When
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.safestring import mark_safe

from accounts.admin import account_id_for, location_name
from accounts.models import Location, User
from contact_input.normalize import is_uuid, normalize_phone
from providers.email import provider_name as email_provider_name

from .. import selectors, services
from ..click_filter import IgnoredReason
from ..models import (
    Channel,
    Click,
    Feedback,
    Message,
    OptOutEvent,
    ReviewRequest,
    ReviewSite,
)
from .base import (
    BACKOFFICE_CSS,
    BigTableAdmin,
    LocationColumn,
    OwnerFilter,
    ReadOnlyAdmin,
    ReadOnlyInline,
    by_account_and_location,
    contact_or_id_search,
    report_refusals,
)

# The filters of lists whose rows belong to a review request.
BY_REQUEST_ACCOUNT, BY_REQUEST_LOCATION = by_account_and_location(
    account="review_request__owner", location="review_request__location"
)
BY_ACCOUNT, BY_LOCATION = by_account_and_location()

# --- Review requests and their messages ------------------------------------------------------


class MessageInline(ReadOnlyInline, admin.TabularInline):
    model = Message
    fields = (
        "step",
        "channel",
        "status",
        "due_at",
        "planned_offset",
        "to_address",
        "attempts",
        "provider",
        "provider_message_id",
        "last_error_code",
        "last_error",
        "sent_at",
    )
    readonly_fields = fields


class MoveRequestsForm(forms.Form):
    """The two locations of a move, among the account's own."""

    from_location = forms.ModelChoiceField(
        queryset=Location.objects.none(), label="Move every review request of"
    )
    to_location = forms.ModelChoiceField(queryset=Location.objects.none(), label="to")

    def __init__(self, *args, owner, **kwargs):
        super().__init__(*args, **kwargs)
        locations = Location.objects.filter(account=owner).order_by("position", "created_at")
        self.fields["from_location"].queryset = locations
        self.fields["to_location"].queryset = locations


class WaitingFilter(admin.SimpleListFilter):
    """Active requests that wait for a review site: their location (no location: the
    account's default) lists none (``ReviewSite.unlisted``). The few locations that list none
    are found first, then their requests on the location index: what the page reads grows with
    the requests that wait, not with the account."""

    title = "waiting"
    parameter_name = "waiting"

    def lookups(self, request, model_admin):
        return (("site", "For a review site (its location lists none)"),)

    def queryset(self, request, queryset):
        if self.value() != "site":
            return queryset
        return queryset.filter(
            ReviewSite.unlisted().rows_q(), status__in=ReviewRequest.ACTIVE_STATUSES
        )


@admin.register(ReviewRequest)
class ReviewRequestAdmin(LocationColumn, BigTableAdmin):
    list_display = (
        "id",
        "contact",
        "owner",
        "location_column",
        "status_shown",
        "scheduled_for",
        "sent_at",
        "ended_reason",
        "created_at",
    )
    list_filter = (
        "status",
        BY_ACCOUNT,
        BY_LOCATION,
        WaitingFilter,
        "ended_reason",
        ("created_at", admin.DateFieldListFilter),
    )
    list_select_related = ("contact", "owner")
    search_fields = ("id", "contact__email_normalized", "contact__phone", "contact__first_name")
    search_help_text = (
        "The request's id, the contact's e-mail or phone number, or words of their name or company."
    )
    readonly_fields = ("timeline",)
    inlines = [MessageInline]
    actions = ("cancel_requests", "send_now", "resend_failed")

    class Media:
        css = {"all": (BACKOFFICE_CSS,)}

    def search_condition(self, search: str) -> Q:
        return contact_or_id_search(search, prefix="contact__")

    def describe_rows(self, rows: list) -> None:
        """The page's rows' location names and whether each one's location lists a review
        site: the page's accounts' locations that list none, then the rows, two queries."""
        if not rows:
            return
        unlisted = ReviewSite.unlisted(accounts={row.owner_id for row in rows})
        waits = When(unlisted.rows_q(), then=Value(False))
        page = ReviewRequest.objects.filter(pk__in=[row.pk for row in rows]).annotate(
            location_label=location_name(),
            location_lists_site=Case(waits, default=Value(True), output_field=BooleanField()),
        )
        found = {
            pk: (label, listed)
            for pk, label, listed in page.values_list("pk", "location_label", "location_lists_site")
        }
        for row in rows:
            row.location_label, row.location_lists_site = found.get(row.pk, (None, True))

    @admin.display(description="status", ordering="status")
    def status_shown(self, obj):
        """The status, and why a scheduled request does not go out: its location lists no
        review site (``Message.hold_reason``)."""
        if obj.is_active and not getattr(obj, "location_lists_site", True):
            return f"{obj.get_status_display()}: waiting for a review site"
        return obj.get_status_display()

    # --- Moving a location's requests (``location_requests_move``) -----------------------------

    def get_urls(self) -> list[URLPattern]:
        return [
            path(
                "move/",
                self.admin_site.admin_view(self.move_view),
                name="reviews_reviewrequest_move",
            ),
            *super().get_urls(),
        ]

    def move_view(self, request: HttpRequest) -> HttpResponse:
        """Move every request of one location to another location of the same account:
        choose the account (``?owner=``, an e-mail or id), then the two locations; a
        confirmation page shows how many requests would move and how many stay (their contact
        already has an active request there); confirmed, ``location_requests_move`` runs and
        the admin log records it on the location moved from."""
        if not self.has_staff_action_permission(request):
            raise PermissionDenied
        data = request.POST if request.method == "POST" else request.GET
        owner_id = account_id_for(data.get("owner", ""))
        owner = User.objects.filter(pk=owner_id, account__isnull=True).first() if owner_id else None
        context = {
            **self.admin_site.each_context(request),
            "title": "Move a location's review requests",
            "opts": self.opts,
            "owner": owner,
            "owner_value": data.get("owner", ""),
        }
        if owner is None:
            return TemplateResponse(request, "admin/reviews/move_requests.html", context)
        form = MoveRequestsForm(
            request.POST if request.method == "POST" else None,
            owner=owner,
            initial={"from_location": request.GET.get("from")},
        )
        context["form"] = form
        if request.method != "POST" or not form.is_valid():
            return TemplateResponse(request, "admin/reviews/move_requests.html", context)
        source, target = form.cleaned_data["from_location"], form.cleaned_data["to_location"]
        try:
            if request.POST.get("confirm") != "yes":
                context["preview"] = selectors.location_requests_move_preview(
                    owner=owner, from_location_id=source.pk, to_location_id=target.pk
                )
                return TemplateResponse(request, "admin/reviews/move_requests.html", context)
            done = services.location_requests_move(
                owner=owner, from_location_id=source.pk, to_location_id=target.pk
            )
        except ValidationError as exc:
            form.add_error(None, exc)
            return TemplateResponse(request, "admin/reviews/move_requests.html", context)
        summary = (
            f"Moved {done.moved} review requests from {source.name} to {target.name}; "
            f"left {done.left} at {source.name} (their contact has an active request at "
            f"{target.name})."
        )
        self.log_change(request, source, summary)
        self.message_user(request, summary, messages.SUCCESS)
        changelist = reverse("admin:reviews_reviewrequest_changelist")
        return HttpResponseRedirect(
            f"{changelist}?{urlencode({'owner': owner.email, 'location': target.pk})}"
        )

    @admin.display(description="timeline")
    def timeline(self, obj):
        return mark_safe(  # a rendered template: every value in it is escaped
            render_to_string(
                "admin/reviews/timeline.html",
                {"events": selectors.review_request_timeline(review_request=obj)},
            )
        )

    @admin.action(
        description="Cancel: end the request, cancel its unsent messages",
        permissions=["staff_action"],
    )
    def cancel_requests(self, request, queryset) -> None:
        done, refused = 0, []
        for item in queryset.select_related("contact"):
            if not item.is_active:
                refused.append(f"{item.contact}: already ended ({item.status}); nothing changed.")
                continue
            ended = services.review_request_cancel(
                review_request=item, detail=f"cancelled by staff ({request.user.email})"
            )
            done += ended.status == ReviewRequest.Status.CANCELLED
        report_refusals(self, request, done, "Cancelled", refused)

    @admin.action(
        description="Send now: make the next waiting message due now (quiet hours and "
        "opt-outs still apply)",
        permissions=["staff_action"],
    )
    def send_now(self, request, queryset) -> None:
        done, refused = 0, []
        for item in queryset.select_related("contact"):
            try:
                services.review_request_send_now(review_request=item)
                done += 1
            except services.SendNowRefused as exc:
                refused.append(f"{item.contact}: {exc}")
        report_refusals(self, request, done, "Due now (a worker sends them shortly)", refused)

    @admin.action(
        description="Resend failed or unknown messages (an unknown SMS needs the Messages "
        "page's forced resend)",
        permissions=["staff_action"],
    )
    def resend_failed(self, request, queryset) -> None:
        done, refused = 0, []
        to_resend = Message.objects.filter(
            review_request__in=queryset,
            status__in=(Message.Status.FAILED, Message.Status.UNKNOWN),
        ).select_related("review_request__contact")
        found = False
        for message in to_resend:
            found = True
            try:
                services.message_resend(message_id=str(message.pk))
                done += 1
            except services.ResendRefused as exc:
                refused.append(f"{message.review_request.contact} (step {message.step}): {exc}")
        if not found:
            refused.append("No failed or unknown message in the selected requests.")
        report_refusals(self, request, done, "Resent (pending again, due now)", refused)


class ProviderFilter(admin.SimpleListFilter):
    """The providers this service sends through (fixed, not a ``DISTINCT`` over every
    message): the SMS ones and the configured e-mail backend."""

    title = "provider"
    parameter_name = "provider"

    def lookups(self, request, model_admin):
        names = ["twilio", "outbox", email_provider_name(get_connection())]
        return [(name, name) for name in dict.fromkeys(names)]

    def queryset(self, request, queryset):
        return queryset.filter(provider=self.value()) if self.value() else queryset


@admin.register(Message)
class MessageAdmin(LocationColumn, BigTableAdmin):
    """Every outbound message row. Resend goes through ``message_resend``: the row goes back
    to pending and the dispatcher and a send task claim it like any other."""

    location_paths = ("review_request__owner", "review_request__location")
    list_display = (
        "review_request",
        "location_column",
        "step",
        "channel",
        "status",
        "to_address",
        "provider",
        "provider_message_id",
        "last_error_code",
        "due_at",
        "sent_at",
        "created_at",
    )
    list_filter = (
        "status",
        "channel",
        ProviderFilter,
        BY_REQUEST_ACCOUNT,
        BY_REQUEST_LOCATION,
        ("created_at", admin.DateFieldListFilter),
    )
    list_select_related = ("review_request",)
    search_fields = ("id", "review_request__id", "provider_message_id", "to_address")
    search_help_text = (
        "The message's or its request's id, the provider's message id, or the contact's "
        "e-mail, phone number or name."
    )
    actions = ("resend", "resend_forced")

    def search_condition(self, search: str) -> Q:
        if is_uuid(search):
            return Q(pk=search) | Q(review_request_id=search) | Q(provider_message_id=search)
        if Message.objects.filter(provider_message_id=search).exists():
            return Q(provider_message_id=search)
        return selectors.contact_search(search=search, prefix="review_request__contact__")

    def has_delete_permission(self, request, obj=None):
        return False

    def _resend(self, request, queryset, *, force: bool) -> None:
        done, refused = 0, []
        for message in queryset:
            try:
                services.message_resend(message_id=str(message.pk), force=force)
                done += 1
            except services.ResendRefused as exc:
                refused.append(f"{message}: {exc}")
        report_refusals(self, request, done, "Resent (pending again, due now)", refused)

    @admin.action(description="Resend failed or unknown messages", permissions=["staff_action"])
    def resend(self, request, queryset) -> None:
        self._resend(request, queryset, force=False)

    @admin.action(
        description="Resend, even an unknown SMS (the person may get it twice)",
        permissions=["staff_action"],
    )
    def resend_forced(self, request, queryset):
        if request.POST.get("confirm") == "yes":
            self._resend(request, queryset, force=True)
            return None
        return TemplateResponse(
            request,
            "admin/reviews/resend_confirm.html",
            {
                **self.admin_site.each_context(request),
                "title": "Resend these messages?",
                "opts": self.opts,
                "messages_to_resend": queryset.select_related("review_request__contact"),
                "unknown_sms": queryset.filter(
                    status=Message.Status.UNKNOWN, channel=Channel.SMS
                ).count(),
                "action": "resend_forced",
                "selected": request.POST.getlist(admin.helpers.ACTION_CHECKBOX_NAME),
            },
        )


# --- Engagement and consent ---------------------------------------------------------------------


class IgnoredReasonFilter(admin.SimpleListFilter):
    """Why a fetch was not counted, from the fixed reasons (``IgnoredReason``), not a
    ``DISTINCT`` over every click (Django's filter for a field without choices reads the
    whole table on every page)."""

    title = "ignored reason"
    parameter_name = "ignored_reason"

    def lookups(self, request, model_admin):
        return [(reason.value, reason.value.replace("_", " ")) for reason in IgnoredReason]

    def queryset(self, request, queryset):
        return queryset.filter(ignored_reason=self.value()) if self.value() else queryset


@admin.register(Click)
class ClickAdmin(LocationColumn, BigTableAdmin):
    location_paths = ("review_request__owner", "review_request__location")
    list_display = (
        "created_at",
        "review_request",
        "location_column",
        "url",
        "counted",
        "ignored_reason",
    )
    list_filter = (
        BY_REQUEST_ACCOUNT,
        BY_REQUEST_LOCATION,
        "counted",
        IgnoredReasonFilter,
        ("created_at", admin.DateFieldListFilter),
    )
    search_fields = ("review_request__id",)
    search_help_text = "The review request's id."

    def search_condition(self, search: str) -> Q:
        return Q(review_request_id=search) if is_uuid(search) else Q(pk__in=[])


@admin.register(Feedback)
class FeedbackAdmin(LocationColumn, ReadOnlyAdmin):
    location_paths = ("review_request__owner", "review_request__location")
    list_display = ("created_at", "review_request", "location_column", "text")
    search_fields = ("text", "review_request__owner__email")
    list_filter = (
        BY_REQUEST_ACCOUNT,
        BY_REQUEST_LOCATION,
        ("created_at", admin.DateFieldListFilter),
    )


@admin.register(OptOutEvent)
class OptOutEventAdmin(BigTableAdmin):
    """The consent audit: read-only, kept OPT_OUT_AUDIT_RETENTION_DAYS. Newest first on its
    ``created_at`` index; the business typed (``OwnerFilter``), no location (an opt-out holds
    across the whole account, whichever location's message it answered); the other filters
    fixed choices; the search an exact address (``reviews_optout_search``)."""

    list_display = ("created_at", "owner", "channel", "action", "source", "address")
    list_select_related = ("owner",)
    list_filter = (
        OwnerFilter,
        "channel",
        "action",
        "source",
        ("created_at", admin.DateFieldListFilter),
    )
    search_fields = ("address",)
    search_help_text = (
        "The whole address: an e-mail as recorded (or in lower case), or a phone number with "
        "its +country code, written any way."
    )

    def search_condition(self, search: str) -> Q:
        addresses = {search, search.lower()}
        if selectors.phone_search_digits(search):
            with contextlib.suppress(ValidationError):
                addresses.add(normalize_phone(search, "ZZ"))
        return Q(address__in=sorted(addresses))

    def has_delete_permission(self, request, obj=None):
        return False
