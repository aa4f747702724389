"""Review requests, their messages, and what contacts did (clicks, feedback, opt-outs)."""

from __future__ import annotations

import contextlib

from django.contrib import admin
from django.core.exceptions import ValidationError
from django.core.mail import get_connection
from django.db.models import Exists, OuterRef, Q
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.utils.safestring import mark_safe

from contact_input.normalize import is_uuid, normalize_phone
from providers.email import provider_name as email_provider_name

from .. import selectors, services
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
    OwnerFilter,
    ReadOnlyAdmin,
    ReadOnlyInline,
    contact_or_id_search,
    report_refusals,
)

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


@admin.register(ReviewRequest)
class ReviewRequestAdmin(BigTableAdmin):
    list_display = (
        "id",
        "contact",
        "owner",
        "status_shown",
        "scheduled_for",
        "sent_at",
        "ended_reason",
        "created_at",
    )
    list_filter = ("status", OwnerFilter, "ended_reason", ("created_at", admin.DateFieldListFilter))
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

    def get_queryset(self, request):
        sites = ReviewSite.objects.filter(owner_id=OuterRef("owner_id"))
        return super().get_queryset(request).annotate(owner_lists_site=Exists(sites))

    @admin.display(description="status", ordering="status")
    def status_shown(self, obj):
        """The status, and why a scheduled request does not go out: its business lists no
        review site (``Message.hold_reason``)."""
        if obj.is_active and not obj.owner_lists_site:
            return f"{obj.get_status_display()}: waiting for a review site"
        return obj.get_status_display()

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
class MessageAdmin(BigTableAdmin):
    """Every outbound message row. Resend goes through ``message_resend``: the row goes back
    to pending and the dispatcher and a send task claim it like any other."""

    list_display = (
        "review_request",
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
    list_filter = ("status", "channel", ProviderFilter, ("created_at", admin.DateFieldListFilter))
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


@admin.register(Click)
class ClickAdmin(BigTableAdmin):
    list_display = ("created_at", "review_request", "url", "counted", "ignored_reason")
    list_filter = ("counted", "ignored_reason", ("created_at", admin.DateFieldListFilter))
    search_fields = ("review_request__id",)
    search_help_text = "The review request's id."

    def search_condition(self, search: str) -> Q:
        return Q(review_request_id=search) if is_uuid(search) else Q(pk__in=[])


@admin.register(Feedback)
class FeedbackAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "review_request", "text")
    search_fields = ("text", "review_request__owner__email")
    list_filter = (("created_at", admin.DateFieldListFilter),)


@admin.register(OptOutEvent)
class OptOutEventAdmin(BigTableAdmin):
    """The consent audit: read-only, kept OPT_OUT_AUDIT_RETENTION_DAYS. Newest first on its
    ``created_at`` index; the business typed (``OwnerFilter``); the other filters fixed
    choices; the search an exact address (``reviews_optout_search``)."""

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
