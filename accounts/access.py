"""Who reaches what in an account: the one rule every entry point uses (the portal, the API).

* The **owner** reaches every location of the account, its members, its settings and its
  connected apps.
* A **manager** reaches the locations given to them: their requests, contacts, feedback,
  wording and review sites; not the members, not the account's settings.
* A **viewer** reaches their locations, read only.

A row of the reviews app carries its account as ``owner`` and, where it has one, a location;
a row with no location (NULL) belongs to the account's default location (the first), so
"the rows of these locations" is ``location IN (...)``, plus ``location IS NULL`` when the
default is one of them (``location_q``). A contact belongs to the whole account; a member sees
one that has a request at one of their locations (``reviews.selectors.contacts_visible``).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from django.db.models import Exists, OuterRef, Q

from .models import Location, Role, User


@dataclass(frozen=True)
class Access:
    """What ``user`` reaches: the account (its ``owner``), the ``role``, and the ids of the
    locations the user reaches (``None``: every location of the account)."""

    user: User
    owner: User
    role: str
    location_ids: frozenset[uuid.UUID] | None
    account_location_ids: tuple[uuid.UUID, ...]  # every location of the account, in order

    @property
    def default_location_id(self) -> uuid.UUID | None:
        """The account's default location (the first); ``None`` while it has none."""
        return self.account_location_ids[0] if self.account_location_ids else None


def access_for(user: User, *, owner_location_ids: Iterable[uuid.UUID] | None = None) -> Access:
    """The access of a logged-in user (an owner or a member): two queries for a member (the
    owner, the locations), one for an owner, none for an owner whose locations the caller has
    already read in order (``owner_location_ids``: the portal reads them cached with the
    account's settings)."""
    owner = user.account if user.account_id is not None else user
    assert owner is not None
    locations = Location.objects.filter(account_id=owner.pk).order_by("position", "created_at")
    if user.account_id is None:
        if owner_location_ids is None:
            owner_location_ids = locations.values_list("pk", flat=True)
        return Access(user, owner, Role.OWNER, None, tuple(owner_location_ids))
    given = User.locations.through.objects.filter(user_id=user.pk, location_id=OuterRef("pk"))
    rows = list(locations.annotate(given=Exists(given)).values_list("pk", "given"))
    return Access(
        user=user,
        owner=owner,
        role=user.role,
        location_ids=frozenset(pk for pk, given in rows if given),
        account_location_ids=tuple(pk for pk, _ in rows),
    )


def locations_q(
    location_ids: Collection[uuid.UUID], *, default_location_id: uuid.UUID | None, field: str
) -> Q:
    """Rows of these locations: ``field`` one of them, or NULL when the account's default
    location is one of them (a NULL location means the default)."""
    condition = Q(**{f"{field}__in": sorted(location_ids)})
    if default_location_id is not None and default_location_id in location_ids:
        condition |= Q(**{f"{field}__isnull": True})
    return condition


def location_q(access: Access, field: str = "location") -> Q:
    """A condition on rows that carry a location (``field``: the path to it, e.g.
    ``"review_requests__location"``), keeping those ``access`` reaches: no condition for an
    owner; a member's locations (and the NULL location, when the default is one of them).
    Combine it with the account's own condition (``owner=access.owner``): it does not check
    the account."""
    if access.location_ids is None:
        return Q()
    return locations_q(
        access.location_ids, default_location_id=access.default_location_id, field=field
    )


def reaches(access: Access, location_id: uuid.UUID | None) -> bool:
    """Whether ``access`` reaches the location ``location_id`` of its account (``None``: the
    default location). A location of another account is never reached."""
    target = location_id if location_id is not None else access.default_location_id
    if access.location_ids is None:
        return location_id is None or location_id in access.account_location_ids
    return target is not None and target in access.location_ids


def locations_reached(access: Access) -> list[Location]:
    """The account's locations ``access`` reaches, in the account's order (the API's
    ``GET /locations``, the OAuth consent page)."""
    locations = Location.objects.filter(account_id=access.owner.pk).order_by(
        "position", "created_at"
    )
    if access.location_ids is not None:
        locations = locations.filter(pk__in=sorted(access.location_ids))
    return list(locations)


def can_write(access: Access) -> bool:
    """Whether ``access`` may change what it reaches (a viewer may not)."""
    return access.role != Role.VIEWER


def can_manage_account(access: Access) -> bool:
    """Whether ``access`` may change the account itself: its members, its settings, its
    locations and its connected apps (the owner only)."""
    return access.role == Role.OWNER
