"""The one rule for whose rows an API call reaches, used by every connector view.

A token's user is the account's owner or one of its members (``accounts.access``): every view
acts for ``api_access(request).owner`` (the account) and keeps the rows ``location_q`` lets the
user reach. An id in the path is looked up among those rows only: a malformed id, an id that
does not exist, another account's id and a row at a location the member does not reach are the
same 404, so that nobody learns what exists outside what they reach. A viewer's writes are a 403
``forbidden`` (``require_write``).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import TypeVar

from django.db.models import Model, Q, QuerySet
from rest_framework import serializers
from rest_framework.exceptions import NotFound, PermissionDenied

from accounts.access import (
    Access,
    access_for,
    can_write,
    location_q,
    reaches,
)
from connector_api.permissions import AuthenticatedRequest
from contact_input.normalize import is_uuid
from events.models import WebhookSubscription

M = TypeVar("M", bound=Model)

LOCATION_FIELD = "location_id"
UNKNOWN_LOCATION = "Not one of your locations: use an `id` from GET /locations."
CHOOSE_LOCATION = (
    "You may not send at the account's default location: give the `location_id` of one of "
    "your locations (GET /locations)."
)
READ_ONLY = "Your role (viewer) may read but not change anything."


def api_access(request: AuthenticatedRequest) -> Access:
    """What the token's user reaches (read once per request)."""
    cached: Access | None = getattr(request, "_connector_access", None)
    if cached is None:
        cached = access_for(request.user)
        request._connector_access = cached  # type: ignore[attr-defined]
    return cached


def is_owner_token(request: AuthenticatedRequest) -> bool:
    """Whether the token's user is the account's owner (who reaches every location and may
    write): what ``access_for`` says of a user with no account, known without a query."""
    return request.user.account_id is None


def require_write(request: AuthenticatedRequest) -> None:
    """A viewer's write is a 403 ``forbidden``."""
    if not is_owner_token(request) and not can_write(api_access(request)):
        raise PermissionDenied(READ_ONLY)


def reachable_or_404(
    queryset: QuerySet[M],
    *,
    access: Access,
    pk: str,
    not_found: str,
    location_field: str | None = "location",
) -> M:
    """The row ``pk`` of ``queryset`` in ``access``'s account and at a location it reaches
    (``location_field``: the path to the row's location; ``None`` for rows without one); any
    other id is a 404 with ``not_found`` as its description (an id that is not a UUID included:
    the lookup would fail rather than find nothing)."""
    found = None
    if is_uuid(pk):
        rows = queryset.filter(owner=access.owner, pk=pk)
        if location_field is not None:
            rows = rows.filter(location_q(access, location_field))
        found = rows.first()
    if found is None:
        raise NotFound(not_found)
    return found


def scoped(
    queryset: QuerySet[M], *, access: Access, location_field: str = "location"
) -> QuerySet[M]:
    """The rows of ``queryset`` in ``access``'s account at the locations it reaches."""
    return queryset.filter(Q(owner=access.owner), location_q(access, location_field))


def subscriptions_of(access: Access) -> QuerySet[WebhookSubscription]:
    """The REST hooks ``access`` sees: every one of the account for its owner, their own for a
    member."""
    hooks = WebhookSubscription.objects.filter(owner=access.owner)
    if access.location_ids is not None:
        hooks = hooks.filter(subscriber=access.user)
    return hooks


def location_given(access: Access, value: object, *, field: str = LOCATION_FIELD) -> uuid.UUID:
    """A ``location_id`` given in a body or a query: one of the locations ``access`` reaches,
    else a 400 ``invalid_request`` naming ``field`` (another account's and a malformed one
    alike)."""
    if isinstance(value, str) and is_uuid(value.strip()):
        location_id = uuid.UUID(value.strip())
        if location_id in access.account_location_ids and reaches(access, location_id):
            return location_id
    raise serializers.ValidationError({field: [UNKNOWN_LOCATION]})


def location_filter(access: Access, value: object) -> uuid.UUID | None:
    """An optional ``location_id`` filter (absent or blank: none)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return location_given(access, value)


def location_for_send(
    request: AuthenticatedRequest, value: object, *, account_location_ids: Collection[uuid.UUID]
) -> uuid.UUID | None:
    """Where ``send-review-request`` adds the request: the ``location_id`` given (one the user
    reaches, else a 400 naming it); absent, the only location the user has, else the
    account's default one (``None``), or a 400 naming ``location_id`` when the user may not
    act at the default. ``account_location_ids``: the account's locations as the caller holds
    them (its cached policy), so an owner's send costs no query here."""
    given = value is not None and not (isinstance(value, str) and not value.strip())
    if is_owner_token(request):  # the owner reaches every location of the account
        if not given:
            return None  # the account's default location (its only one, if one)
        if (
            isinstance(value, str)
            and is_uuid(value.strip())
            and (uuid.UUID(value.strip()) in account_location_ids)
        ):
            return uuid.UUID(value.strip())
        raise serializers.ValidationError({LOCATION_FIELD: [UNKNOWN_LOCATION]})
    access = api_access(request)
    if given:
        return location_given(access, value)
    assert access.location_ids is not None
    if len(access.location_ids) == 1:
        return next(iter(access.location_ids))
    if reaches(access, None):
        return access.default_location_id
    raise serializers.ValidationError({LOCATION_FIELD: [CHOOSE_LOCATION]})
