"""What every back-office page of the reviews app shares."""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.db.models import Q

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


class BigTableAdmin(ReadOnlyAdmin):
    """A changelist whose cost does not grow with the table (millions of requests, contacts,
    messages): one COUNT capped at ``EXACT_COUNT_CAP`` rows (beyond: the planner's estimate,
    shown as "about"), no second unfiltered COUNT, newest first on a ``(created_at, id)``
    index, filters with fixed choices (no ``DISTINCT`` over the table), no date hierarchy (its
    drill-down reads every row's date: the ``created_at`` filter's fixed ranges replace it),
    and a search that each index can answer (``search_condition``)."""

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


class OwnerFilter(admin.SimpleListFilter):
    """The business, typed (an e-mail, with the browser's completion from the list of
    businesses) rather than a link per owner found by ``SELECT DISTINCT owner_id`` over the
    whole table. ``?owner=`` takes the owner's e-mail or id."""

    title = "business"
    parameter_name = "owner"
    template = "admin/reviews/owner_filter.html"
    field = "owner"

    def __init__(self, request, params, model, model_admin):
        super().__init__(request, params, model, model_admin)
        # The other filters and the search, kept by the filter's own form.
        self.kept_params = [
            (name, value)
            for name, values in request.GET.lists()
            if name not in {self.parameter_name, "p", "e"}
            for value in values
        ]

    def lookups(self, request, model_admin):
        return [
            (owner.email, owner.business_name or owner.email)
            for owner in business_owners().only("email", "business_name")
        ]

    def has_output(self) -> bool:
        return True

    def owner_id(self):
        value = (self.value() or "").strip()
        if is_uuid(value):
            return value
        owner = User.objects.with_email(value).only("pk").first()
        return owner.pk if owner else None

    def queryset(self, request, queryset):
        if not self.value():
            return queryset
        owner_id = self.owner_id()
        if owner_id is None:
            return queryset.none()
        return queryset.filter(**{f"{self.field}_id": owner_id})


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
