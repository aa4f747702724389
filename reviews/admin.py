"""Staff views of the reviews app.

Contacts, review requests and messages are read-only here: they are written by
``reviews.services`` (``add_contact`` and the delivery engine), whose rules (dedup keys,
one active request, claim-before-send) an admin form would bypass. Staff actions that go
through the services (add a contact, cancel, resend) come with the back-office issue.
"""

import json

from django.contrib import admin
from django.utils.html import format_html

from .models import (
    BusinessSettings,
    Click,
    Contact,
    Feedback,
    Message,
    MessageTemplate,
    OptOutEvent,
    ReviewRequest,
    ReviewSite,
)


@admin.register(ReviewSite)
class ReviewSiteAdmin(admin.ModelAdmin):
    list_display = ("label", "kind", "url", "owner", "position")
    list_filter = ("kind",)
    search_fields = ("label", "url", "owner__email", "owner__business_name")
    raw_id_fields = ("owner",)


@admin.register(BusinessSettings)
class BusinessSettingsAdmin(admin.ModelAdmin):
    list_display = (
        "owner",
        "initial_channel",
        "follow_up_offsets_hours",
        "cooldown_days",
        "send_window_start",
        "send_window_end",
        "send_window_applies_to",
        "default_delay_hours",
    )
    search_fields = ("owner__email", "owner__business_name")
    raw_id_fields = ("owner",)
    readonly_fields = ("created_at", "updated_at")


class _ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class ReviewRequestInline(admin.TabularInline):
    model = ReviewRequest
    fields = ("status", "scheduled_for", "sent_at", "ended_at", "ended_reason", "created_at")
    readonly_fields = fields
    extra = 0
    show_change_link = True
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Contact)
class ContactAdmin(_ReadOnlyAdmin):
    list_display = ("display_name", "email", "phone", "owner", "source", "created_at")
    list_filter = ("source", "created_at")
    search_fields = ("first_name", "last_name", "email_normalized", "phone", "owner__email")
    readonly_fields = ("metadata_pretty",)
    exclude = ("metadata",)
    inlines = [ReviewRequestInline]

    @admin.display(description="metadata")
    def metadata_pretty(self, obj):
        return format_html("<pre>{}</pre>", json.dumps(obj.metadata, indent=2, ensure_ascii=False))


class MessageInline(admin.TabularInline):
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
        "last_error",
        "sent_at",
    )
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(ReviewRequest)
class ReviewRequestAdmin(_ReadOnlyAdmin):
    list_display = ("id", "contact", "owner", "status", "scheduled_for", "ended_reason")
    list_filter = ("status", "ended_reason")
    search_fields = ("id", "contact__email_normalized", "contact__phone", "owner__email")
    date_hierarchy = "scheduled_for"
    inlines = [MessageInline]


@admin.register(MessageTemplate)
class MessageTemplateAdmin(admin.ModelAdmin):
    """A business's own wording per step. The form runs ``MessageTemplate.clean`` (merge
    fields, review link, business name, STOP line); the segment count uses sample values."""

    list_display = ("owner", "channel", "step", "subject", "segments")
    list_filter = ("channel", "step")
    search_fields = ("owner__email", "owner__business_name", "body")
    raw_id_fields = ("owner",)
    readonly_fields = ("segments", "created_at", "updated_at")
    fields = ("owner", "channel", "step", "subject", "body", "segments", "created_at", "updated_at")

    @admin.display(description="SMS segments (sample values)")
    def segments(self, obj):
        count = obj.sample_segments() if obj and obj.pk else None
        return str(count) if count else "-"


@admin.register(Click)
class ClickAdmin(_ReadOnlyAdmin):
    list_display = ("created_at", "review_request", "url", "counted", "ignored_reason")
    list_filter = ("counted", "ignored_reason")
    search_fields = ("review_request__id", "url", "user_agent")
    date_hierarchy = "created_at"


@admin.register(Feedback)
class FeedbackAdmin(_ReadOnlyAdmin):
    list_display = ("created_at", "review_request", "text")
    search_fields = ("text", "review_request__owner__email")
    date_hierarchy = "created_at"


@admin.register(OptOutEvent)
class OptOutEventAdmin(_ReadOnlyAdmin):
    """The consent audit: read-only, kept OPT_OUT_AUDIT_RETENTION_DAYS."""

    list_display = ("created_at", "owner", "channel", "action", "source", "address")
    list_filter = ("channel", "action", "source")
    search_fields = ("address", "owner__email", "raw_text")
    date_hierarchy = "created_at"

    def has_delete_permission(self, request, obj=None):
        return False
