"""Staff views of the reviews app (the back office).

Contacts, review requests and messages are read-only rows here: they are written by
``reviews.services`` (``contact_add`` and the delivery engine), whose rules (dedup keys, one
active request, opt-outs, claim-before-send) an admin form would bypass. Every staff write goes
through a service: the CSV import (``contacts_import`` → ``contact_add``), the request actions
(``review_request_cancel``, ``review_request_send_now``, ``message_resend``), business settings
(``business_settings_update``) and message wording (``message_template_save``).

Extra pages, under the models they belong to: ``reviewrequest/dashboard/`` (the staff
dashboard), ``contact/import/`` (CSV import) and ``messagetemplate/preview/`` (the live preview
the template form calls as staff type).
"""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from accounts.admin import UserAdmin
from accounts.validators import validate_region, validate_time_zone

from . import dashboard, selectors, services
from .models import (
    MAX_FOLLOW_UPS,
    BusinessSettings,
    Channel,
    Click,
    Contact,
    Feedback,
    Message,
    MessageTemplate,
    OptOutEvent,
    ReviewRequest,
    ReviewSite,
)
from .normalize import is_uuid
from .rendering import preview_message
from .services.business import POLICY_FIELDS, PROFILE_FIELDS
from .services.imports import ImportFileError

User = get_user_model()

BACKOFFICE_CSS = "css/admin-backoffice.css"


def _businesses():
    """Owners of a business (they have review settings), by name."""
    return User.objects.filter(review_settings__isnull=False).order_by("business_name", "email")


class _ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_staff_action_permission(self, request) -> bool:
        """Actions that go through a service need the model's change permission (the forms
        stay read-only for everyone)."""
        opts = self.opts
        return request.user.has_perm(f"{opts.app_label}.change_{opts.model_name}")


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


class _ReadOnlyInline:
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class BusinessSettingsInline(_ReadOnlyInline, admin.StackedInline):
    model = BusinessSettings
    verbose_name_plural = "review settings (edit them on their own page)"
    fields = POLICY_FIELDS
    readonly_fields = fields


class ReviewSiteInline(_ReadOnlyInline, admin.TabularInline):
    model = ReviewSite
    fields = ("position", "label", "kind", "url")
    readonly_fields = fields


class MessageTemplateInline(_ReadOnlyInline, admin.TabularInline):
    model = MessageTemplate
    fields = ("channel", "step", "subject", "body", "segments")
    readonly_fields = fields
    verbose_name_plural = "own message wording (defaults apply to every other step)"

    @admin.display(description="SMS segments")
    def segments(self, obj):
        count = obj.sample_segments()
        return str(count) if count else "-"


admin.site.unregister(User)


@admin.register(User)
class BusinessAdmin(UserAdmin):
    """Owners with everything about their business on one page: profile (here), review
    settings, review sites and their own wording (each editable on its own page)."""

    inlines = [BusinessSettingsInline, ReviewSiteInline, MessageTemplateInline]

    def get_inlines(self, request, obj):
        # The add page creates the login only (its settings come with the defaults on first
        # use); read-only inlines there would demand formset data the form never sends.
        return self.inlines if obj is not None else []


@admin.register(ReviewSite)
class ReviewSiteAdmin(admin.ModelAdmin):
    list_display = ("label", "kind", "url", "owner", "position")
    list_select_related = ("owner",)
    list_filter = ("kind",)
    search_fields = ("label", "url", "owner__email", "owner__business_name")
    raw_id_fields = ("owner",)


# --- Message wording with its live preview -----------------------------------------------------


class _TemplateForm(forms.ModelForm):
    class Meta:
        model = MessageTemplate
        fields = ("owner", "channel", "step", "subject", "body")
        widgets = {"body": forms.Textarea(attrs={"rows": 8, "cols": 80})}


@admin.register(MessageTemplate)
class MessageTemplateAdmin(admin.ModelAdmin):
    """A business's own wording per step. The form runs ``MessageTemplate.clean`` (merge
    fields, review link, business name, STOP line) and saves through
    ``message_template_save``; the preview beside it renders the draft for a sample contact
    through the real send path (SMS text and segment count, or the e-mail), as staff type."""

    form = _TemplateForm
    list_display = ("owner", "channel", "step", "subject", "segments")
    list_select_related = ("owner",)
    list_filter = ("channel", "step")
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
        if not errors:
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


def _object_from_url(request: HttpRequest) -> MessageTemplate | None:
    """The saved template whose change page asks for the preview (the page's ``_template``
    hidden field), else None (the add page)."""
    pk = request.POST.get("_template")
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


# --- Contacts and the CSV import --------------------------------------------------------------


class ReviewRequestInline(_ReadOnlyInline, admin.TabularInline):
    model = ReviewRequest
    fields = ("status", "scheduled_for", "sent_at", "ended_at", "ended_reason", "created_at")
    readonly_fields = fields


class ChannelFilter(admin.SimpleListFilter):
    title = "channel"
    parameter_name = "channel"

    def lookups(self, request, model_admin):
        return (("sms", "Has a mobile number"), ("email", "Has an e-mail"), ("both", "Both"))

    def queryset(self, request, queryset):
        has_phone, has_email = ~Q(phone=""), ~Q(email_normalized="")
        return {
            "sms": queryset.filter(has_phone),
            "email": queryset.filter(has_email),
            "both": queryset.filter(has_phone & has_email),
        }.get(self.value(), queryset)


class OptedOutFilter(admin.SimpleListFilter):
    title = "opted out"
    parameter_name = "opted_out"

    def lookups(self, request, model_admin):
        return (("sms", "Of SMS"), ("email", "Of e-mail"), ("any", "Of either"), ("no", "No"))

    def queryset(self, request, queryset):
        sms, email = Q(sms_opted_out_at__isnull=False), Q(email_opted_out_at__isnull=False)
        return {
            "sms": queryset.filter(sms),
            "email": queryset.filter(email),
            "any": queryset.filter(sms | email),
            "no": queryset.exclude(sms | email),
        }.get(self.value(), queryset)


class ImportForm(forms.Form):
    owner = forms.EmailField(
        label="Business (login e-mail)", help_text="The owner the contacts are added for."
    )
    file = forms.FileField(
        label="CSV file",
        help_text="First line: column names, e.g. First name, Last name, Email, Mobile, "
        "Company, Delay (hours), Metadata (JSON). Comma, semicolon or tab separated; UTF-8 or "
        "Excel's encoding.",
    )
    dry_run = forms.BooleanField(
        label="Dry run: check the file and show the report; write and send nothing",
        required=False,
    )

    def clean_owner(self):
        email = self.cleaned_data["owner"]
        owner = User.objects.with_email(email).first()
        if owner is None:
            raise ValidationError("No business with this e-mail.")
        return owner


@admin.register(Contact)
class ContactAdmin(_ReadOnlyAdmin):
    list_display = (
        "display_name",
        "email",
        "phone",
        "owner",
        "source",
        "opted_out",
        "created_at",
    )
    list_filter = (
        ("owner", admin.RelatedOnlyFieldListFilter),
        ChannelFilter,
        OptedOutFilter,
        "source",
        "created_at",
    )
    list_select_related = ("owner",)
    search_fields = ("first_name", "last_name", "company_name", "email_normalized", "phone")
    search_help_text = "Name, company, e-mail or phone number (written any way)."
    readonly_fields = ("metadata_pretty",)
    exclude = ("metadata",)
    inlines = [ReviewRequestInline]

    @admin.display(description="opted out")
    def opted_out(self, obj) -> str:
        return ", ".join(
            label
            for label, at in (("SMS", obj.sms_opted_out_at), ("e-mail", obj.email_opted_out_at))
            if at
        )

    @admin.display(description="metadata")
    def metadata_pretty(self, obj):
        return format_html("<pre>{}</pre>", json.dumps(obj.metadata, indent=2, ensure_ascii=False))

    def get_search_results(self, request, queryset, search_term):
        results, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        # "(415) 555-2671" is stored as +14155552671: match the digits, not the words.
        if digits := selectors.phone_search_digits(search_term.strip()):
            results |= queryset.filter(phone__contains=digits)
        return results, may_have_duplicates

    def get_urls(self):
        return [
            path(
                "import/",
                self.admin_site.admin_view(self.import_view),
                name="reviews_contact_import",
            ),
            *super().get_urls(),
        ]

    def has_import_permission(self, request) -> bool:
        return request.user.has_perm("reviews.add_contact")

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}), "can_import": self.has_import_permission(request)}
        return super().changelist_view(request, extra_context)

    def import_view(self, request: HttpRequest) -> HttpResponse:
        """Upload a CSV file for one business; every row goes through ``contact_add``. The
        page answers with the report: counts, ignored columns and each row not imported."""
        if not self.has_import_permission(request):
            raise PermissionDenied
        report = None
        file_error = ""
        if request.method == "POST":
            form = ImportForm(request.POST, request.FILES)
            if form.is_valid():
                try:
                    report = services.contacts_import(
                        owner=form.cleaned_data["owner"],
                        raw=form.cleaned_data["file"].read(),
                        dry_run=form.cleaned_data["dry_run"],
                    )
                except ImportFileError as exc:
                    file_error = str(exc)
        else:
            form = ImportForm()
        return TemplateResponse(
            request,
            "admin/reviews/contact_import.html",
            {
                **self.admin_site.each_context(request),
                "title": "Import contacts from a CSV file",
                "opts": self.opts,
                "form": form,
                "report": report,
                "file_error": file_error,
                "shown": REPORT_ROWS_SHOWN,
                "media": self.media + form.media,
            },
        )


REPORT_ROWS_SHOWN = 1000


# --- Review requests, their messages and the dashboard ---------------------------------------


class MessageInline(_ReadOnlyInline, admin.TabularInline):
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


def _report_refusals(modeladmin, request, done: int, verb: str, refused: list[str]) -> None:
    if done:
        modeladmin.message_user(request, f"{verb}: {done}.", messages.SUCCESS)
    for reason in refused[:20]:
        modeladmin.message_user(request, reason, messages.WARNING)
    if len(refused) > 20:
        modeladmin.message_user(request, f"... and {len(refused) - 20} more.", messages.WARNING)


@admin.register(ReviewRequest)
class ReviewRequestAdmin(_ReadOnlyAdmin):
    list_display = (
        "id",
        "contact",
        "owner",
        "status",
        "scheduled_for",
        "sent_at",
        "ended_reason",
    )
    list_filter = ("status", ("owner", admin.RelatedOnlyFieldListFilter), "ended_reason")
    list_select_related = ("contact", "owner")
    search_fields = ("id", "contact__email_normalized", "contact__phone", "owner__email")
    date_hierarchy = "scheduled_for"
    readonly_fields = ("timeline",)
    inlines = [MessageInline]
    actions = ("cancel_requests", "send_now", "resend_failed")

    class Media:
        css = {"all": (BACKOFFICE_CSS,)}

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
        _report_refusals(self, request, done, "Cancelled", refused)

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
        _report_refusals(self, request, done, "Due now (a worker sends them shortly)", refused)

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
        _report_refusals(self, request, done, "Resent (pending again, due now)", refused)

    def get_urls(self):
        return [
            path(
                "dashboard/",
                self.admin_site.admin_view(self.dashboard_view),
                name="reviews_dashboard",
            ),
            *super().get_urls(),
        ]

    def dashboard_view(self, request: HttpRequest) -> HttpResponse:
        """Requests per day for 30 days (chart and table), click-through rate, failure
        reasons and opt-outs, for every business or one (``?owner=<id>``)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        businesses = list(_businesses().only("pk", "email", "business_name"))
        chosen = request.GET.get("owner", "")
        owner = next((b for b in businesses if str(b.pk) == chosen), None)
        data = dashboard.staff_dashboard(owner_id=owner.pk if owner else None)
        return TemplateResponse(
            request,
            "admin/reviews/dashboard.html",
            {
                **self.admin_site.each_context(request),
                "title": "Review requests: the last 30 days",
                "opts": self.opts,
                "businesses": businesses,
                "owner": owner,
                "data": data,
                "chart": data.chart(),
                "media": self.media,
            },
        )


@admin.register(Message)
class MessageAdmin(_ReadOnlyAdmin):
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
    )
    list_filter = ("status", "channel", "provider", "last_error_code")
    list_select_related = ("review_request",)
    search_fields = ("id", "provider_message_id", "to_address", "review_request__id")
    date_hierarchy = "created_at"
    actions = ("resend", "resend_forced")

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
        _report_refusals(self, request, done, "Resent (pending again, due now)", refused)

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
    list_select_related = ("owner",)
    list_filter = ("channel", "action", "source")
    search_fields = ("address", "owner__email", "raw_text")
    date_hierarchy = "created_at"

    def has_delete_permission(self, request, obj=None):
        return False
