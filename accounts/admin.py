"""Staff views of accounts: logins, an account's locations and members, and the account and
location filters every list of per-location rows uses (``AccountFilter``, ``LocationFilter``).

An account's page lists its locations and its members inline. Every change made there goes
through ``accounts.services`` (``location_create/update/move/delete``, ``member_add/update/
remove``), the portal's rules: the inline forms are never saved by ``Model.save``. A change a
service refuses (a location that still has review requests, a password the validators refuse)
is shown on the page with the service's own message, and nothing of the save is kept: the
admin's transaction is rolled back and the page shown again with what staff typed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.forms.formsets import DELETION_FIELD_NAME as DELETE
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from . import services
from .access import locations_q
from .models import MEMBER_ROLES, Location, User

# --- Filters by account and location (every list of per-account rows) -------------------------


def _uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value.strip())
    except (AttributeError, ValueError):
        return None


def account_id_for(value: str) -> uuid.UUID | None:
    """The account a filter's value names: its id, or its owner's e-mail (however typed)."""
    value = (value or "").strip()
    if not value:
        return None
    if (pk := _uuid(value)) is not None:
        return pk
    owner = User.objects.with_email(value).filter(account__isnull=True).only("pk").first()
    return owner.pk if owner else None


class AccountFilter(admin.SimpleListFilter):
    """The account, typed (its owner's e-mail, with the browser's completion from the list of
    accounts, or its id) rather than a link per account found by ``SELECT DISTINCT`` over the
    whole table. ``field``: the row's path to its account."""

    title = "account"
    parameter_name = "owner"
    template = "admin/accounts/account_filter.html"
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

    def accounts(self):
        return User.objects.filter(account__isnull=True, is_staff=False).order_by(
            "business_name", "email"
        )

    def lookups(self, request, model_admin):
        return [
            (owner.email, owner.business_name or owner.email)
            for owner in self.accounts().only("email", "business_name")
        ]

    def has_output(self) -> bool:
        return True

    def account_id(self) -> uuid.UUID | None:
        return account_id_for(self.value() or "")

    def account_condition(self, account_id: uuid.UUID) -> Q:
        return Q(**{self.field: account_id})

    def queryset(self, request, queryset):
        if not self.value():
            return queryset
        account_id = self.account_id()
        if account_id is None:
            return queryset.none()
        return queryset.filter(self.account_condition(account_id))


class LocationFilter(admin.SimpleListFilter):
    """One location, chosen among the locations of the account the ``AccountFilter`` chose
    (``account_parameter``): no list of every location in the database; shown once an account
    is chosen. ``?location=<id>`` works alone too (a link from the account's page).

    ``field`` is the row's path to its location and ``account_field`` to its account; a row
    with no location belongs to the account's default location (``accounts.access.locations_q``)
    unless ``null_is_default`` is off (a row with no location is then no location's). Two
    queries at most, whatever the table's size: the account's locations, and the rows."""

    title = "location"
    parameter_name = "location"
    account_parameter = "owner"
    field = "location"
    account_field = "owner"
    null_is_default = True

    def __init__(self, request, params, model, model_admin):
        self.chosen_account = account_id_for(request.GET.get(self.account_parameter, ""))
        super().__init__(request, params, model, model_admin)

    def _locations(self) -> list[tuple[uuid.UUID, uuid.UUID, str]]:
        """(id, account, name) of the locations of the chosen account, or of the chosen
        location's account, in the account's order (the first is the default)."""
        if not hasattr(self, "_cached"):
            location_id = _uuid(self.value() or "")
            if self.chosen_account is not None:
                account: Any = self.chosen_account
            elif location_id is not None:
                account = Subquery(Location.objects.filter(pk=location_id).values("account")[:1])
            else:
                self._cached: list[tuple[uuid.UUID, uuid.UUID, str]] = []
                return self._cached
            self._cached = list(
                Location.objects.filter(account=account)
                .order_by("position", "created_at")
                .values_list("pk", "account_id", "name")
            )
        return self._cached

    def lookups(self, request, model_admin):
        if self.chosen_account is None:
            return []
        return [(str(pk), name) for pk, _, name in self._locations()]

    def has_output(self) -> bool:
        # Shown, and so applied, once an account is chosen or a location is given.
        return bool(self.lookup_choices) or bool(self.value())

    def location_condition(
        self, location_id: uuid.UUID, *, account_id: uuid.UUID, default_id: uuid.UUID | None
    ) -> Q:
        """The rows of the location ``location_id`` of ``account_id`` (``default_id``: the
        account's default location, whose rows include those with no location)."""
        rows = locations_q([location_id], default_location_id=default_id, field=self.field)
        return rows & Q(**{self.account_field: account_id})

    def counted(
        self,
        queryset: models.QuerySet,
        location_id: uuid.UUID,
        *,
        account_id: uuid.UUID,
        default_id: uuid.UUID | None,
    ) -> models.QuerySet | None:
        """As many rows as the location's (``queryset``: the list before this filter), in a
        query cheaper to count; ``None``: count the filtered list. The default location's
        rows are its own and those with no location: two ranges of the location index added
        up (``UNION ALL``), where one ``OR`` of them has the planner read the table. Only for
        rows that carry the location themselves: through a join (a request's messages), the
        planner's guess of the unplaced rows (every account's) hashes the whole joined table
        for the second range, worse than the ``OR``'s walk that stops at the cap."""
        if location_id != default_id or "__" in self.field:
            return None
        rows = queryset.order_by().filter(**{self.account_field: account_id})
        own = rows.filter(**{self.field: location_id}).values("pk")
        unplaced = rows.filter(**{f"{self.field}__isnull": True}).values("pk")
        return own.union(unplaced, all=True)

    def queryset(self, request, queryset):
        if not self.value():
            return queryset
        location_id = _uuid(self.value() or "")
        locations = self._locations()
        found = next((row for row in locations if row[0] == location_id), None)
        if location_id is None or found is None:
            return queryset.none()
        default_id = locations[0][0] if self.null_is_default else None
        where = {"account_id": found[1], "default_id": default_id}
        filtered = queryset.filter(self.location_condition(location_id, **where))
        # What the list's count may count instead (``LocationCounted``) while nothing else
        # narrows the list.
        request.location_counted = (filtered, self.counted(queryset, location_id, **where))
        return filtered


class LocationCounted:
    """A list filtered by ``LocationFilter`` counts its rows with the filter's cheaper query
    (``LocationFilter.counted``) when the list holds the filter's rows and no other filter or
    search narrows them. Mixed into a ``ModelAdmin`` whose paginator takes ``counted=``."""

    def get_paginator(self, request, queryset, per_page, orphans=0, allow_empty_first_page=True):
        counted = None
        if location_counted := getattr(request, "location_counted", None):
            filtered, cheaper = location_counted
            if cheaper is not None and _rows_sql(queryset) == _rows_sql(filtered):
                counted = cheaper
        return self.paginator(queryset, per_page, orphans, allow_empty_first_page, counted=counted)


def _rows_sql(queryset: models.QuerySet) -> str:
    """Which rows ``queryset`` holds, as its statement (its order and joins for display
    aside)."""
    return str(queryset.order_by().values("pk").query)


def location_name(*, account: str = "owner", location: str = "location") -> Coalesce:
    """The name of a row's location as an expression (``account`` and ``location``: the row's
    paths to them): its location's, else (no location) its account's default location's."""
    default = Location.objects.filter(account=OuterRef(account)).order_by("position", "created_at")
    return Coalesce(
        F(f"{location}__name"),
        Subquery(default.values("name")[:1]),
        output_field=models.CharField(),
    )


# --- Logins, members and accounts -------------------------------------------------------------


class UserCreationForm(AdminUserCreationForm):
    class Meta:
        model = User
        fields = ("email", "business_name", "time_zone", "default_region")


class UserEditForm(UserChangeForm):
    class Meta:
        model = User
        fields = "__all__"


class TeamFilter(AccountFilter):
    """The logins of one account: its owner and its members."""

    parameter_name = "account"

    def lookups(self, request, model_admin):
        # Typed only: this list is the accounts themselves (its search finds them).
        return []

    def account_condition(self, account_id: uuid.UUID) -> Q:
        return Q(pk=account_id) | Q(account_id=account_id)


# A change an inline's service refused: {formset prefix: [(form index, error)]}, kept on the
# request for the page shown again (``UserAdmin.changeform_view``).
_REFUSALS = "accounts_admin_refusals"


class _Refused(Exception):
    def __init__(self, prefix: str, index: int, error: ValidationError) -> None:
        super().__init__(prefix, index, error)
        self.prefix, self.index, self.error = prefix, index, error


class ServiceFormSet(forms.BaseInlineFormSet):
    """An inline formset that shows the refusal of the service that was to save it: the
    service's messages above the inline, and on the row when it is still there."""

    refusals: list[tuple[int, ValidationError]] = []

    def clean(self) -> None:
        super().clean()
        messages: list[str] = []
        for index, error in self.refusals:
            form = self.forms[index] if index < len(self.forms) else None
            deleted = self.can_delete and form is not None and form.cleaned_data.get(DELETE)
            if form is not None and not deleted:
                for field, errors in getattr(error, "error_dict", {None: error}).items():
                    target = field if field in form.fields else None
                    form.add_error(target, ValidationError(errors))
            messages += error.messages
        if messages:
            raise ValidationError(messages)


class _ServiceInline(admin.TabularInline):
    """An inline saved by services (``UserAdmin.save_formset`` calls ``save_with_services``)."""

    formset = ServiceFormSet
    extra = 0

    def get_formset(self, request, obj=None, **kwargs):
        formset = super().get_formset(request, obj, **kwargs)
        refused = getattr(request, _REFUSALS, {}).get(formset.get_default_prefix(), [])
        return type(formset.__name__, (formset,), {"refusals": refused})

    def save_with_services(self, request, account: User, formset) -> None:
        raise NotImplementedError


def _run(formset, index: int, call: Callable[[], Any]) -> Any:
    """``call`` (a service), its ``ValidationError`` turned into the admin's refusal."""
    try:
        return call()
    except ValidationError as exc:
        raise _Refused(formset.prefix, index, exc) from None


class LocationForm(forms.ModelForm):
    class Meta:
        model = Location
        fields = ("name", "time_zone", "position")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["position"].required = False
        self.fields["position"].help_text = "0: first, the default location. Blank: last."
        if self.instance._state.adding:
            self.initial.pop("position", None)
            self.fields["time_zone"].required = False
            self.fields["time_zone"].help_text = "Blank: the account's."


class LocationInline(_ServiceInline):
    """The account's locations in order; the first is its default."""

    model = Location
    form = LocationForm
    fk_name = "account"
    fields = ["name", "time_zone", "position", "is_default"]
    readonly_fields = ["is_default"]
    ordering = ("position", "created_at")

    @admin.display(description="default", boolean=True)
    def is_default(self, obj: Location) -> bool | None:
        if obj is None or obj._state.adding:
            return None
        if getattr(self, "_first", None) is None:
            first = Location.objects.filter(account_id=obj.account_id)
            self._first = first.order_by("position", "created_at").values_list("pk", flat=True)[0]
        return obj.pk == self._first

    def save_with_services(self, request, account: User, formset) -> None:
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        for index, form in enumerate(formset.forms):
            if form in formset.deleted_forms:
                if form in formset.initial_forms:
                    location = form.instance
                    _run(
                        formset,
                        index,
                        partial(services.location_delete, account=account, location_id=location.pk),
                    )
                    formset.deleted_objects.append(location)
                continue
            if not form.has_changed():
                continue
            data, changed = form.cleaned_data, form.changed_data
            if form in formset.extra_forms:
                location = _run(
                    formset,
                    index,
                    partial(
                        services.location_create,
                        account=account,
                        name=data["name"],
                        time_zone=data.get("time_zone") or None,
                    ),
                )
                formset.new_objects.append(location)
            else:
                location = form.instance
                if {"name", "time_zone"} & set(changed):
                    _run(
                        formset,
                        index,
                        partial(
                            services.location_update,
                            account=account,
                            location_id=location.pk,
                            name=data["name"],
                            time_zone=data["time_zone"],
                        ),
                    )
                formset.changed_objects.append((location, changed))
            if "position" in changed and data.get("position") is not None:
                services.location_move(
                    account=account, location_id=location.pk, position=data["position"]
                )


class MemberForm(forms.ModelForm):
    """A member: their e-mail (fixed once they exist), role and locations (the account's);
    a new member's first password."""

    new_password = forms.CharField(
        label="password",
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="A new member's password (the validators' rules apply). Owners invite from "
        "the portal instead.",
    )

    class Meta:
        model = User
        fields = ("email", "role", "locations")
        widgets = {"locations": forms.CheckboxSelectMultiple}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["role"].choices = [(role.value, role.label) for role in MEMBER_ROLES]
        if not self.instance._state.adding:
            self.fields["email"].disabled = True
            self.fields["new_password"].disabled = True
            self.fields["new_password"].help_text = ""


class MemberInline(_ServiceInline):
    """The account's managers and viewers with their locations."""

    model = User
    form = MemberForm
    fk_name = "account"
    fields = ("email", "role", "locations", "new_password")
    verbose_name = "member"
    verbose_name_plural = "members (managers and viewers)"
    show_change_link = True

    def get_formset(self, request, obj=None, **kwargs):
        formset = super().get_formset(request, obj, **kwargs)
        # Only the account's own locations to choose from.
        locations = Location.objects.filter(account=obj).order_by("position", "created_at")
        formset.form.base_fields["locations"].queryset = locations
        return formset

    def save_with_services(self, request, account: User, formset) -> None:
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        for index, form in enumerate(formset.forms):
            if form in formset.deleted_forms:
                if form in formset.initial_forms:
                    member = form.instance
                    services.member_remove(account=account, member_id=member.pk)
                    formset.deleted_objects.append(member)
                continue
            if not form.has_changed():
                continue
            data = form.cleaned_data
            location_ids = [location.pk for location in data.get("locations", [])]
            if form in formset.extra_forms:
                member = _run(
                    formset,
                    index,
                    partial(
                        services.member_add,
                        account=account,
                        email=data["email"],
                        password=data.get("new_password") or "",
                        role=data["role"],
                        location_ids=location_ids,
                    ),
                )
                formset.new_objects.append(member)
            else:
                member = _run(
                    formset,
                    index,
                    partial(
                        services.member_update,
                        account=account,
                        member_id=form.instance.pk,
                        role=data["role"],
                        location_ids=location_ids,
                    ),
                )
                formset.changed_objects.append((member, form.changed_data))


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    """Logins: owners (an account, with its locations and members inline) and members (their
    account, role and locations shown; changed on the account's page)."""

    form = UserEditForm
    add_form = UserCreationForm
    list_display = (
        "email",
        "business_name",
        "role",
        "account",
        "time_zone",
        "default_region",
        "is_staff",
        "is_active",
    )
    list_select_related = ("account",)
    list_filter = (TeamFilter, "role", "is_staff", "is_active", "default_region")
    search_fields = ("email", "business_name")
    ordering = ("email",)
    readonly_fields = ("id", "date_joined", "last_login", "member_of", "member_locations")
    account_inlines = [LocationInline, MemberInline]
    fieldsets = (
        (None, {"fields": ("id", "email", "password")}),
        ("Business", {"fields": ("business_name", "time_zone", "default_region")}),
        (
            "Permissions",
            {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")},
        ),
        ("Dates", {"fields": ("last_login", "date_joined")}),
    )
    member_fieldsets = (
        (None, {"fields": ("id", "email", "password")}),
        (
            "Team (changed on the account's page)",
            {"fields": ("member_of", "role", "member_locations")},
        ),
        ("Permissions", {"fields": ("is_active",)}),
        ("Dates", {"fields": ("last_login", "date_joined")}),
    )
    add_fieldsets = (
        (
            None,
            {
                "classes": ("wide",),
                "fields": (
                    "email",
                    "business_name",
                    "time_zone",
                    "default_region",
                    "password1",
                    "password2",
                ),
            },
        ),
    )

    def get_fieldsets(self, request, obj=None):
        if obj is not None and obj.is_member:
            return self.member_fieldsets
        return super().get_fieldsets(request, obj)

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and obj.is_member:
            return (*self.readonly_fields, "role")
        return self.readonly_fields

    @admin.display(description="account")
    def member_of(self, obj: User):
        owner = obj.account
        if owner is None:
            return "-"
        url = reverse("admin:accounts_user_change", args=[owner.pk])
        return format_html('<a href="{}">{}</a>', url, owner)

    @admin.display(description="locations")
    def member_locations(self, obj: User):
        names = obj.locations.order_by("position", "created_at").values_list("name", flat=True)
        return format_html_join(", ", "{}", ((name,) for name in names)) or "-"

    def get_inlines(self, request, obj):
        # An account (an owner) only: the add page makes the login alone (its first location
        # comes with it), and a member has neither locations nor members of their own.
        if obj is None or obj.is_member or obj.is_staff:
            return []
        return [*self.account_inlines, *super().get_inlines(request, obj)]

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except _Refused as refused:
            # The admin's transaction rolled back everything the save had written; the same
            # POST again, with the service's message on the inline row it refused.
            setattr(request, _REFUSALS, {refused.prefix: [(refused.index, refused.error)]})
            return super().changeform_view(request, object_id, form_url, extra_context)

    def save_formset(self, request, form, formset, change):
        inline = next(
            (
                inline
                for inline in self.get_inline_instances(request, form.instance)
                if isinstance(inline, _ServiceInline) and inline.model is formset.model
            ),
            None,
        )
        if inline is None:
            super().save_formset(request, form, formset, change)
            return
        inline.save_with_services(request, form.instance, formset)
