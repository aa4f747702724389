"""Keyset pagination of list endpoints: ``{"results": [...], "next": <cursor or null>}``.

A cursor is opaque to clients (base64url of the last item's ``created_at`` and ``id``): the
next page starts strictly after that item in the ``-created_at, -id`` order, so rows added
meanwhile never shift a page, and no page costs more than its own rows (no OFFSET).
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from datetime import datetime
from typing import Protocol, TypeVar

from django.db.models import Q, QuerySet
from rest_framework import serializers

DEFAULT_LIMIT = 25
MAX_LIMIT = 100
BAD_CURSOR = "Is not a cursor this API returned; pass the `next` value of the previous page."


class Dated(Protocol):
    """What a paged row has: its position in the ``-created_at, -id`` order."""

    @property
    def created_at(self) -> datetime: ...

    @property
    def pk(self) -> uuid.UUID: ...


# A paged row. Bound to Dated, not to Model (the bound of QuerySet's parameter): typing has no
# "a Model that is also Dated", so ``page`` sets that bound aside once, and mypy still checks at
# each call that the model has ``created_at`` and a UUID ``pk``.
_Row = TypeVar("_Row", bound=Dated)


def encode_cursor(item: Dated) -> str:
    raw = json.dumps([item.created_at.isoformat(), str(item.pk)], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, uuid.UUID]:
    """The position a cursor names; ``serializers.ValidationError`` when it is not one."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created_at, pk = json.loads(raw)
        position = datetime.fromisoformat(created_at), uuid.UUID(pk)
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
        raise serializers.ValidationError(BAD_CURSOR) from None
    if position[0].tzinfo is None:
        raise serializers.ValidationError(BAD_CURSOR)
    return position


def page(
    queryset: QuerySet[_Row],  # type: ignore[type-var]  # models that are Dated: see _Row
    *,
    limit: int,
    cursor: str = "",
) -> tuple[list[_Row], str | None]:
    """One page of ``queryset`` (ordered ``-created_at, -id``) after ``cursor``: the items and
    the next page's cursor (``None`` on the last page)."""
    if cursor:
        created_at, pk = decode_cursor(cursor)
        queryset = queryset.filter(
            Q(created_at__lt=created_at) | Q(created_at=created_at, pk__lt=pk)
        )
    items = list(queryset[: limit + 1])
    if len(items) > limit:
        return items[:limit], encode_cursor(items[limit - 1])
    return items, None


class PageQuerySerializer(serializers.Serializer[None]):
    """``limit`` and ``cursor`` query parameters of every list endpoint."""

    limit = serializers.IntegerField(
        required=False,
        default=DEFAULT_LIMIT,
        min_value=1,
        max_value=MAX_LIMIT,
        help_text=f"Items per page, 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT}).",
    )
    cursor = serializers.CharField(
        required=False,
        default="",
        help_text="The `next` value of the previous page; absent for the first page.",
    )

    def validate_cursor(self, value: str) -> str:
        if value:
            decode_cursor(value)
        return value
