"""What every back-office page of the reviews app shares."""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.db.models import F, Q

from accounts.admin import AccountFilter, LocationCounted, LocationFilter, location_name
from contact_input.normalize import is_uuid
from core.pagination import EstimatedCountPaginator

from .. import selectors

User = get_user_model()


BACKOFFICE_CSS = "css/admin-backoffice.css"


def business_owners():
    """Owners of a business (they have review settings), by name."""
    return User.objects.filter(review_settings__isnull=False).order_by("business_name", "email")


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_staff_action_permission(self, request) -> bool:
        """Actions that go through a service need the model's change permission (the forms
        stay read-only for everyone)."""
        opts = self.opts
        return request.user.has_perm(f"{opts.app_label}.change_{opts.model_name}")


# --- Changelists of big tables ---------------------------------------------------------------


class BigTableAdmin(LocationCounted, ReadOnlyAdmin):
    """A changelist whose cost does not grow with the table (millions of requests, contacts,
    messages): one COUNT capped at ``EXACT_COUNT_CAP`` rows (beyond: the planner's estimate,
    shown as "about"), no second unfiltered COUNT, newest first on a ``(created_at, id)``
    index, filters with fixed choices (no ``DISTINCT`` over the table), no date hierarchy (its
    drill-down reads every row's date: the ``created_at`` filter's fixed ranges replace it),
    a search that each index can answer (``search_condition``), and a location filter's
    count taken from its cheaper query (``LocationCounted``)."""

    show_full_result_count = False
    paginator = EstimatedCountPaginator
    ordering = ("-created_at",)  # the changelist adds "-pk": the (created_at, id) index
    sortable_by = ("created_at",)  # sorting by another column would sort the whole table

    def search_condition(self, search: str) -> Q:
        """The rows a search finds, as one condition; empty ``Q()``: every row."""
        raise NotImplementedError

    def get_search_results(self, request, queryset, search_term):
        search = search_term.strip()
        if not search:
            return queryset, False
        return queryset.filter(self.search_condition(search)), False


def contact_or_id_search(search: str, *, prefix: str) -> Q:
    """A search of rows that belong to a contact: an id (the row's, exact), else the
    contact's e-mail, phone or names (``reviews.selectors.contact_search``; no region: a
    national number is searched by its digits, as staff serve every business)."""
    if is_uuid(search):
        return Q(pk=search)
    return selectors.contact_search(search=search, prefix=prefix)


class OwnerFilter(AccountFilter):
    """The business, typed (an e-mail, with the browser's completion from the list of
    businesses) rather than a link per owner found by ``SELECT DISTINCT owner_id`` over the
    whole table. ``?owner=`` takes the owner's e-mail or id; ``field``: the row's path to it."""

    title = "business"

    def accounts(self):
        return business_owners()


def by_account_and_location(
    *, account: str = "owner", location: str = "location", null_is_default: bool = True
) -> tuple[type[OwnerFilter], type[LocationFilter]]:
    """The filters of a list of per-location rows: the business (``?owner=``), then one of its
    locations (``?location=``), for rows whose paths to them are ``account`` and ``location``
    (e.g. ``review_request__owner``)."""

    class ByAccount(OwnerFilter):
        field = account

    class ByLocation(LocationFilter):
        field = location
        account_field = account

    ByLocation.null_is_default = null_is_default
    return ByAccount, ByLocation


class LocationColumn:
    """A "location" column on a list of rows that belong to a location: the location's name
    (a row with no location: its account's default location's, ``location_name``), read for the
    page's rows in one query after the page is chosen, so the list's count and the page's query
    stay as they were. ``location_paths``: the row's paths to its account and its location."""

    location_paths = ("owner", "location")
    # What a row with no location is at, when it is not its account's default location (a
    # message template with no location is the account's wording, for every location).
    null_location_label: str | None = None

    def changelist_view(self, request, extra_context=None):
        response = super().changelist_view(request, extra_context)
        changelist = (getattr(response, "context_data", None) or {}).get("cl")
        if changelist is not None:
            self.describe_rows(list(changelist.result_list))
        return response

    def describe_rows(self, rows: list) -> None:
        """Set what the page shows about each row's location (``location_label``)."""
        if not rows:
            return
        account, location = self.location_paths
        label = (
            location_name(account=account, location=location)
            if self.null_location_label is None
            else F(f"{location}__name")
        )
        page = self.model.objects.filter(pk__in=[row.pk for row in rows])  # type: ignore[attr-defined]
        labels = dict(page.annotate(location_label=label).values_list("pk", "location_label"))
        for row in rows:
            row.location_label = labels.get(row.pk) or self.null_location_label

    @admin.display(description="location")
    def location_column(self, obj) -> str:
        return getattr(obj, "location_label", None) or "-"


class ReadOnlyInline:
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


def report_refusals(modeladmin, request, done: int, verb: str, refused: list[str]) -> None:
    if done:
        modeladmin.message_user(request, f"{verb}: {done}.", messages.SUCCESS)
    for reason in refused[:20]:
        modeladmin.message_user(request, reason, messages.WARNING)
    if len(refused) > 20:
        modeladmin.message_user(request, f"... and {len(refused) - 20} more.", messages.WARNING)
