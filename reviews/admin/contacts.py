"""Contacts, and the CSV import."""

from __future__ import annotations

import json
import uuid

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.html import format_html

from accounts.access import locations_q
from accounts.admin import LocationFilter

from .. import services
from ..models import (
    Contact,
    ReviewRequest,
)
from ..services.imports import ImportFileError
from .base import BigTableAdmin, OwnerFilter, ReadOnlyInline, contact_or_id_search

User = get_user_model()


# --- Contacts and the CSV import --------------------------------------------------------------


class ReviewRequestInline(ReadOnlyInline, admin.TabularInline):
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


class ContactLocationFilter(LocationFilter):
    """A contact is at the locations of its requests (as a member sees it,
    ``reviews.selectors.contacts_visible``): the contacts with a request at the location.

    The list's count, when this filter is its only condition besides the account, counts
    the location's requests' distinct contacts (``counted``, ``LocationCounted``): the same
    number (a request's contact is its account's), read in order from the requests' index of
    location, owner and contact and stopping at the count's cap, where the semi-join read every
    contact of the account (and hashing the location's requests' contacts, every request of the
    location)."""

    def location_condition(
        self, location_id: uuid.UUID, *, account_id: uuid.UUID, default_id: uuid.UUID | None
    ) -> Q:
        at = ReviewRequest.objects.filter(
            locations_q([location_id], default_location_id=default_id, field="location"),
            owner=account_id,
            contact=OuterRef("pk"),
        )
        return Q(Exists(at), owner=account_id)

    def counted(
        self,
        queryset: QuerySet,
        location_id: uuid.UUID,
        *,
        account_id: uuid.UUID,
        default_id: uuid.UUID | None,
    ) -> QuerySet:
        """The location's requests' distinct contacts (a request's contact is its account's).
        The default location's: those of its own requests and of the requests with no location,
        as one ``UNION`` of the two index ranges; their ``OR`` had the planner walk the
        account's requests in contact order to stop at the cap (559 ms at 1M requests)."""
        requests = ReviewRequest.objects.filter(owner=account_id).order_by()
        own = requests.filter(location=location_id).values("contact_id")
        if location_id != default_id:
            return own.distinct()
        return own.union(requests.filter(location=None).values("contact_id"))


class ImportForm(forms.Form):
    owner = forms.EmailField(
        label="Business (login e-mail)", help_text="The owner the contacts are added for."
    )
    file = forms.FileField(
        label="CSV or Excel (.xlsx) file",
        help_text="First line: column names, e.g. First name, Last name, Email, Mobile, "
        "Company, Delay (hours), Metadata (JSON). CSV: comma, semicolon or tab separated, UTF-8 "
        "or Excel's encoding. Excel: the first worksheet.",
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
class ContactAdmin(BigTableAdmin):
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
        OwnerFilter,
        ContactLocationFilter,
        ChannelFilter,
        OptedOutFilter,
        "source",
        ("created_at", admin.DateFieldListFilter),
    )
    list_select_related = ("owner",)
    search_fields = ("first_name", "last_name", "company_name", "email_normalized", "phone")
    search_help_text = (
        "The contact's id, e-mail or phone number (written any way), or words of their name "
        "or company."
    )
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

    def search_condition(self, search: str) -> Q:
        return contact_or_id_search(search, prefix="")

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
                "title": "Import contacts from a CSV or Excel file",
                "opts": self.opts,
                "form": form,
                "report": report,
                "file_error": file_error,
                "shown": REPORT_ROWS_SHOWN,
                "media": self.media + form.media,
            },
        )


REPORT_ROWS_SHOWN = 1000
