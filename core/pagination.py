"""Pagination whose cost is bounded by the page shown, not by the rows stored.

* ``keyset_page``: newest first on ``(created_at, pk)``, one page after (older than) or
  before (newer than) an opaque cursor: each page is one index range scan of ``size + 1`` rows,
  as fast at the millionth row as at the first (OFFSET would walk every row before it);
* ``capped_count``: "1,000+" instead of counting a million rows to print one number;
* ``EstimatedCountPaginator``: Django's paginator for the admin's changelists, counting
  exactly up to a cap and taking the planner's estimate of big results beyond it.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from django.core.paginator import Paginator
from django.db import connections
from django.db.models import Model, Q, QuerySet
from django.utils.functional import cached_property

# --- Keyset pages (newest first) ------------------------------------------------------------------


class Positioned(Protocol):
    """A row a cursor can point at: its ``created_at`` and its primary key."""

    @property
    def created_at(self) -> datetime: ...

    @property
    def pk(self) -> Any: ...


_M = TypeVar("_M", bound=Model)
_Row = TypeVar("_Row", bound=Positioned)


@dataclass(frozen=True)
class KeysetPage(Generic[_Row]):
    """One page of rows, newest first, and the cursors of the pages around it (``""``: none)."""

    object_list: Sequence[_Row]
    newer: str = ""  # pass as ``before=`` for the page of newer rows
    older: str = ""  # pass as ``after=`` for the page of older rows

    @property
    def has_other_pages(self) -> bool:
        return bool(self.newer or self.older)


def encode_cursor(row: Positioned) -> str:
    """An opaque cursor for the position of ``row`` (its ``created_at`` and primary key)."""
    raw = json.dumps([row.created_at.isoformat(), str(row.pk)], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, uuid.UUID | int] | None:
    """The position a cursor holds (a UUID or an integer primary key); ``None`` for anything
    else (a tampered or stale link)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created_at, pk = json.loads(raw)
        at = datetime.fromisoformat(created_at)
        if at.tzinfo is None:
            return None
        return at, int(pk) if pk.isdigit() else uuid.UUID(pk)
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        return None


def keyset_slice(
    queryset: QuerySet[_M, _Row], *, size: int, after: str = "", before: str = ""
) -> QuerySet[_M, _Row]:
    """The query of one keyset page: ``size + 1`` rows of ``queryset`` just older than the
    ``after`` cursor (newest first), just newer than ``before`` (oldest first), or the newest
    (``after`` and ``before`` empty or invalid). The extra row says whether there are more.

    The range conditions repeat ``created_at <=`` / ``>=`` beside the tie-breaking OR so the
    database starts an index on ``(..., created_at, pk)`` at the cursor instead of filtering
    from the top; rows with equal ``created_at`` are ordered by primary key, so every row is
    on exactly one page.
    """
    if position := decode_cursor(after) if after else None:
        at, pk = position
        older = Q(created_at__lt=at) | Q(pk__lt=pk)
        return (
            queryset.filter(created_at__lte=at)
            .filter(older)
            .order_by("-created_at", "-pk")[: size + 1]
        )
    if position := decode_cursor(before) if before else None:
        at, pk = position
        newer = Q(created_at__gt=at) | Q(pk__gt=pk)
        return (
            queryset.filter(created_at__gte=at)
            .filter(newer)
            .order_by("created_at", "pk")[: size + 1]
        )
    return queryset.order_by("-created_at", "-pk")[: size + 1]


def keyset_page(
    queryset: QuerySet[Model, _Row], *, size: int, after: str = "", before: str = ""
) -> KeysetPage[_Row]:
    """The page of ``queryset`` (newest first by ``created_at``, then primary key) just older
    than the ``after`` cursor, just newer than ``before``, or the newest page. An invalid
    cursor, or a ``before`` page that reaches the newest row, gives the newest page."""
    if after and decode_cursor(after):
        rows = list(keyset_slice(queryset, size=size, after=after))
        return KeysetPage(
            rows[:size],
            newer=encode_cursor(rows[0]) if rows else after,
            older=encode_cursor(rows[size - 1]) if len(rows) > size else "",
        )
    if before and decode_cursor(before):
        rows = list(keyset_slice(queryset, size=size, before=before))
        if len(rows) > size:
            rows = rows[:size][::-1]
            return KeysetPage(rows, newer=encode_cursor(rows[0]), older=encode_cursor(rows[-1]))
    rows = list(keyset_slice(queryset, size=size))
    return KeysetPage(rows[:size], older=encode_cursor(rows[size - 1]) if len(rows) > size else "")


def capped_count(queryset: QuerySet[Model], *, cap: int) -> tuple[int, bool]:
    """``(count, capped)``: the exact count up to ``cap``; ``(cap, True)`` when there are more.
    One query that reads at most ``cap + 1`` rows."""
    count = queryset.order_by()[: cap + 1].count()
    return min(count, cap), count > cap


# --- The admin's paginator ------------------------------------------------------------------------

EXACT_COUNT_CAP = 10_000
# Pages offered when the count is an estimate: deeper pages would make the database skip
# (OFFSET) ever more rows; past them, a filter or a search narrows the list instead.
MAX_ESTIMATED_PAGES = 100


def planner_estimate(queryset: QuerySet[Model]) -> int | None:
    """The number of rows PostgreSQL's planner expects ``queryset`` to return (from the table
    statistics ``ANALYZE`` keeps: no row is read); ``None`` on other databases."""
    if connections[queryset.db].vendor != "postgresql":
        return None
    plan = json.loads(queryset.order_by().values("pk").explain(format="json"))
    return int(plan[0]["Plan"]["Plan Rows"])


if TYPE_CHECKING:
    _ModelPaginator = Paginator[Model]
else:  # Django's classes take no type arguments at runtime
    _ModelPaginator = Paginator


class EstimatedCountPaginator(_ModelPaginator):
    """Counts exactly up to ``EXACT_COUNT_CAP`` rows (a filtered or searched list, a small
    table: the number shown is right); past that, takes the planner's estimate instead of
    counting millions of rows for one number (``count_is_estimate`` says so), and offers at
    most ``MAX_ESTIMATED_PAGES`` pages of it. Use with ``show_full_result_count = False``,
    which drops the admin's second, unfiltered COUNT."""

    object_list: QuerySet[Model]  # the admin's changelist pages a queryset
    count_is_estimate = False

    def __init__(self, *args: Any, counted: QuerySet[Model] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        # As many rows as ``object_list`` has, cheaper to count (e.g. from another table's
        # index); ``None``: count ``object_list`` itself.
        self.counted = counted

    @cached_property
    def count(self) -> int:
        counted = self.object_list if self.counted is None else self.counted
        exact, capped = capped_count(counted, cap=EXACT_COUNT_CAP)
        if not capped:
            return exact
        estimate = planner_estimate(self.object_list)
        if estimate is None:
            return counted.count()
        self.count_is_estimate = True
        return max(estimate, exact)

    @property
    def num_pages(self) -> int:
        pages = super().num_pages
        return min(pages, MAX_ESTIMATED_PAGES) if self.count_is_estimate else pages
