"""Businesses: their review settings, review sites and message wording (with its live
preview)."""

from __future__ import annotations

from urllib.parse import urlencode

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from accounts.admin import LocationInline, MemberInline, UserAdmin
from accounts.validators import validate_region, validate_time_zone
from contact_input.normalize import is_uuid

from .. import services
from ..models import (
    MAX_FOLLOW_UPS,
    BusinessSettings,
    Channel,
    MessageTemplate,
    ReviewSite,
)
from ..rendering import preview_message
from ..services.business import POLICY_FIELDS, PROFILE_FIELDS
from .base import BACKOFFICE_CSS, LocationColumn, ReadOnlyInline, by_account_and_location

User = get_user_model()


# --- Businesses -----------------------------------------------------------------------------------


class _SettingsForm(forms.ModelForm):
    """A business's sending policy plus its profile (name, time zone, phone region), saved
    together by ``business_settings_update``."""

    business_name = forms.CharField(max_length=200, required=False)
    time_zone = forms.CharField(
        max_length=64, validators=[validate_time_zone], help_text="IANA, e.g. America/New_York."
    )
    default_region = forms.CharField(
        max_length=2,
        help_text="Phone numbers written without a country code are read in this region.",
    )

    class Meta:
        model = BusinessSettings
        fields = ("owner", *POLICY_FIELDS)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        owner = getattr(self.instance, "owner", None) if self.instance.pk else None
        for name in PROFILE_FIELDS:
            if owner is not None:
                self.fields[name].initial = getattr(owner, name)
        if owner is None:
            self.fields["time_zone"].initial = "UTC"
            self.fields["default_region"].initial = "US"

    def clean_default_region(self):
        region = self.cleaned_data["default_region"].upper()
        validate_region(region)
        return region


@admin.register(BusinessSettings)
class BusinessSettingsAdmin(admin.ModelAdmin):
    form = _SettingsForm
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
    list_select_related = ("owner",)
    search_fields = ("owner__email", "owner__business_name")
    raw_id_fields = ("owner",)
    readonly_fields = ("created_at", "updated_at")
    fieldsets = (
        (None, {"fields": ("owner", "business_name", "time_zone", "default_region")}),
        (
            "Sending policy",
            {
                "fields": (
                    "initial_channel",
                    "default_delay_hours",
                    "follow_up_offsets_hours",
                    "follow_up_other_channel",
                    "cooldown_days",
                )
            },
        ),
        (
            "Quiet hours (recipient's clock)",
            {"fields": ("send_window_start", "send_window_end", "send_window_applies_to")},
        ),
        ("E-mail sender", {"fields": ("sender_name", "postal_address")}),
        ("Notifications", {"fields": ("notify_feedback",)}),
        ("Dates", {"fields": ("created_at", "updated_at")}),
    )

    def get_readonly_fields(self, request, obj=None):
        return (*self.readonly_fields, "owner") if obj else self.readonly_fields

    def save_model(self, request, obj, form, change):
        # Through the portal's service: the same validation, both rows or neither.
        changes = {
            name: form.cleaned_data[name]
            for name in (*PROFILE_FIELDS, *POLICY_FIELDS)
            if name in form.cleaned_data
        }
        policy = services.business_settings_update(owner=obj.owner, changes=changes)
        obj.pk = policy.pk
        obj._state.adding = False


class BusinessSettingsInline(ReadOnlyInline, admin.StackedInline):
    model = BusinessSettings
    verbose_name_plural = "review settings (edit them on their own page)"
    fields = POLICY_FIELDS
    readonly_fields = fields


class ReviewSiteInline(ReadOnlyInline, admin.TabularInline):
    model = ReviewSite
    fields = ("location", "position", "label", "kind", "url")
    readonly_fields = fields
    ordering = ("location__position", "position", "created_at")


class MessageTemplateInline(ReadOnlyInline, admin.TabularInline):
    model = MessageTemplate
    fields = ("location", "channel", "step", "subject", "body", "segments")
    readonly_fields = fields
    verbose_name_plural = "own message wording (defaults apply to every other step)"

    @admin.display(description="SMS segments")
    def segments(self, obj):
        count = obj.sample_segments()
        return str(count) if count else "-"


class LocationWithRequestsInline(LocationInline):
    """The account's locations, each with links to its review requests and to the page that
    moves them to another location."""

    fields = [*LocationInline.fields, "review_requests"]
    readonly_fields = [*LocationInline.readonly_fields, "review_requests"]

    @admin.display(description="review requests")
    def review_requests(self, obj):
        if obj is None or obj._state.adding:
            return "-"
        query = urlencode({"owner": obj.account_id, "location": obj.pk})
        move = urlencode({"owner": obj.account_id, "from": obj.pk})
        return format_html(
            '<a href="{}?{}">List</a> · <a href="{}?{}">Move them to another location</a>',
            reverse("admin:reviews_reviewrequest_changelist"),
            query,
            reverse("admin:reviews_reviewrequest_move"),
            move,
        )


admin.site.unregister(User)


@admin.register(User)
class BusinessAdmin(UserAdmin):
    """Owners with everything about their business on one page: profile (here), its
    locations and members (``accounts.admin``), review settings, review sites and their own
    wording (each editable on its own page). ``UserAdmin.get_inlines`` shows them on an
    account's page only: the add page creates the login alone (its settings come with the
    defaults on first use; read-only inlines there would demand formset data the form never
    sends), and a member has none of their own."""

    account_inlines = [LocationWithRequestsInline, MemberInline]
    inlines = [BusinessSettingsInline, ReviewSiteInline, MessageTemplateInline]


class _ReviewSiteForm(forms.ModelForm):
    """What staff type about a review site. The rest is decided by the services the portal
    uses (``review_site_add``, ``review_site_update``): the kind follows the link, a blank
    label is named from it, a new site without a position goes last."""

    # A link typed without a scheme is read as https, as the portal reads it.
    url = forms.URLField(max_length=500, assume_scheme="https")

    class Meta:
        model = ReviewSite
        fields = ("owner", "url", "label", "position")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        label, position = self.fields["label"], self.fields["position"]
        label.required = False
        label.help_text = (
            "Shown on the review page. Blank: named from the link (Google, Facebook, "
            "Trustpilot, else its host)."
        )
        position.required = False
        if self.instance._state.adding:
            self.initial.pop("position", None)
            position.help_text = "Blank: last on the business's list."
        else:
            # Shown and validated (one site per link and business), never changed: a site
            # belongs to one business.
            self.fields["owner"].disabled = True
            position.help_text = "Blank: where it is."


SITE_FILTERS = by_account_and_location()
# A template with no location is the account's wording (every location without its own).
TEMPLATE_FILTERS = by_account_and_location(null_is_default=False)


@admin.register(ReviewSite)
class ReviewSiteAdmin(LocationColumn, admin.ModelAdmin):
    """Add, change and delete through the portal's services: the same validation and defaults,
    and a first site releases the requests held while the business listed none."""

    form = _ReviewSiteForm
    list_display = ("label", "kind", "url", "owner", "location_column", "position")
    list_select_related = ("owner",)
    list_filter = (*SITE_FILTERS, "kind")
    search_fields = ("label", "url", "owner__email", "owner__business_name")
    raw_id_fields = ("owner",)
    fields = ("owner", "url", "label", "kind_from_link", "position")
    readonly_fields = ("kind_from_link",)

    @admin.display(description="kind")
    def kind_from_link(self, obj):
        if obj is None or obj._state.adding:
            return "Set from the link when saved."
        return obj.get_kind_display()

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        if change:
            site = services.review_site_update(
                owner=obj.owner,
                site_id=obj.pk,
                url=data["url"],
                label=data["label"],
                position=data["position"],
            )
        else:
            site = services.review_site_add(
                owner=data["owner"], url=data["url"], label=data["label"], position=data["position"]
            )
        # The admin's message, log entry and redirect name the row the service saved.
        for name in ("id", "kind", "label", "url", "position", "created_at"):
            setattr(obj, name, getattr(site, name))
        obj._state.adding = False

    def delete_model(self, request, obj):
        services.review_site_remove(owner=obj.owner, site_id=obj.pk)

    def delete_queryset(self, request, queryset):
        for site in queryset.select_related("owner"):
            services.review_site_remove(owner=site.owner, site_id=site.pk)


# --- Message wording with its live preview -----------------------------------------------------


class _TemplateForm(forms.ModelForm):
    class Meta:
        model = MessageTemplate
        fields = ("owner", "channel", "step", "subject", "body")
        widgets = {"body": forms.Textarea(attrs={"rows": 8, "cols": 80})}


@admin.register(MessageTemplate)
class MessageTemplateAdmin(LocationColumn, admin.ModelAdmin):
    """A business's own wording per step. The form runs ``MessageTemplate.clean`` (merge
    fields, review link, business name, STOP line) and saves through
    ``message_template_save`` (deletes through ``message_template_reset``); the preview beside
    it renders the draft for a sample contact through the real send path (SMS text and segment
    count, or the e-mail), as staff type."""

    form = _TemplateForm
    null_location_label = "All locations (the account's wording)"
    list_display = ("owner", "location_column", "channel", "step", "subject", "segments")
    list_select_related = ("owner",)
    list_filter = (*TEMPLATE_FILTERS, "channel", "step")
    search_fields = ("owner__email", "owner__business_name", "body")
    raw_id_fields = ("owner",)
    readonly_fields = ("segments", "preview", "created_at", "updated_at")
    fields = ("owner", "channel", "step", "subject", "body", "preview", "created_at", "updated_at")

    class Media:
        js = ("js/template-preview.js",)
        css = {"all": (BACKOFFICE_CSS,)}

    def get_readonly_fields(self, request, obj=None):
        # One row per (owner, channel, step): a saved row's key does not change.
        return (*self.readonly_fields, "owner", "channel", "step") if obj else self.readonly_fields

    @admin.display(description="SMS segments (sample values)")
    def segments(self, obj):
        count = obj.sample_segments() if obj is not None and not obj._state.adding else None
        return str(count) if count else "-"

    @admin.display(description="preview")
    def preview(self, obj):
        # A new row already has its UUID: "saved" is what the database says, not the pk.
        saved = obj if obj is not None and not obj._state.adding else None
        preview = None
        if saved is not None:
            preview = preview_message(
                owner=saved.owner, channel=saved.channel, step=saved.step, template=saved
            )
        return _preview_box(
            preview, errors={"body": ["Type the wording to see it here."]}, template=saved
        )

    def get_urls(self):
        return [
            path(
                "preview/",
                self.admin_site.admin_view(self.preview_view),
                name="reviews_messagetemplate_preview",
            ),
            *super().get_urls(),
        ]

    def preview_view(self, request: HttpRequest) -> HttpResponse:
        """The form's current values, rendered (POST from template-preview.js); a saved row
        keeps its owner, channel and step, which its form shows read-only."""
        if request.method != "POST":
            return HttpResponse(status=405, headers={"Allow": "POST"})
        if not self.has_view_permission(request):
            raise PermissionDenied
        data = request.POST
        saved = _object_from_url(request)
        owner_id = saved.owner_id if saved else data.get("owner", "")
        channel = saved.channel if saved else data.get("channel", "")
        step = saved.step if saved else data.get("step", "")
        errors: dict[str, list[str]] = {}
        preview = None
        owner = User.objects.filter(pk=owner_id).first() if is_uuid(owner_id) else None
        if owner is None:
            errors["owner"] = ["Choose the business first."]
        if channel not in Channel.values:
            errors["channel"] = ["Choose the channel."]
        if not str(step).isdigit() or int(step) > MAX_FOLLOW_UPS:
            errors["step"] = [f"A step from 0 to {MAX_FOLLOW_UPS}."]
        if owner is not None and not errors:
            try:
                draft = services.message_template_draft(
                    owner=owner,
                    channel=channel,
                    step=int(step),
                    subject=data.get("subject", ""),
                    body=data.get("body", ""),
                )
                preview = preview_message(
                    owner=owner, channel=channel, step=int(step), template=draft
                )
            except ValidationError as exc:
                errors = exc.message_dict
        return HttpResponse(_preview_box(preview, errors=errors))

    def save_model(self, request, obj, form, change):
        template = services.message_template_save(
            owner=obj.owner, channel=obj.channel, step=obj.step, subject=obj.subject, body=obj.body
        )
        obj.pk = template.pk
        obj._state.adding = False

    # Deleting a business's wording is the portal's "back to the default wording".
    def delete_model(self, request, obj):
        services.message_template_reset(owner=obj.owner, channel=obj.channel, step=obj.step)

    def delete_queryset(self, request, queryset):
        for template in queryset.select_related("owner"):
            services.message_template_reset(
                owner=template.owner, channel=template.channel, step=template.step
            )


def _object_from_url(request: HttpRequest) -> MessageTemplate | None:
    """The saved template whose change page asks for the preview (the page's ``_template``
    hidden field), else None (the add page)."""
    pk = request.POST.get("_template", "")
    return MessageTemplate.objects.filter(pk=pk).first() if is_uuid(pk) else None


def _preview_box(preview, *, errors, template: MessageTemplate | None = None) -> str:
    return mark_safe(  # a rendered template: every value in it is escaped
        render_to_string(
            "admin/reviews/message_preview.html",
            {
                "preview": preview,
                "errors": errors,
                "template": template,
                "preview_url": reverse("admin:reviews_messagetemplate_preview"),
            },
        )
    )
