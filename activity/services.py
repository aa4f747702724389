"""Keeping the dashboards' rollup (``ActivityRollup``) current, and rebuilding it.

The rollup counts events per owner, location and UTC hour by each event's own timestamp
(``activity.selectors.activity_hourly``, the live reads' definitions), so an hour's counts are
final once its events are written. ``activity_rollup_refresh`` (beat, every few minutes)
recomputes the hours from ``REOPEN_HOURS`` before the last closed one up to the start of the
current hour, idempotently (delete the window's rows, insert them again from the base tables),
and moves ``closed_until`` there; readers take the rollup's hours before ``closed_until`` and
the base tables after it, so no event is counted twice or missed at the boundary. Re-reading
the last ``REOPEN_HOURS`` picks up events written late with an earlier timestamp (a message
whose unknown outcome resolved as sent when it was attempted, a provider's receipt time).
Each also sums the UTC days its hours touch into ``ActivityDailyRollup`` (the totals of long
periods), and the window's hours and days over each account's locations into
``ActivityAccountRollup`` and ``ActivityAccountDailyRollup`` (the whole account's reads).
``activity_rollup_rebuild`` recomputes everything (after a restore, and the first backfill).
Each holds the state row's lock, so two never interleave.

Hours the state marks to re-derive (``backfill_to``: the rollup's hours from before it had
locations) are re-derived by the refreshes themselves, the newest ``REBUILD_CHUNK`` of them per
refresh, moving ``covered_from`` back over them: readers take only the hours the rollup covers,
so they read the base tables for the others meanwhile. A location's rows follow the requests'
(NULL: the default location's); when the default changes, ``activity_rollup_pin_default`` pins
the rollup's NULL rows as reviews pins the requests.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from django.db import transaction
from django.db.models import Exists, F, Min, OuterRef, QuerySet, Subquery, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from core.times import utc_day_start, utc_hour_start
from reviews.models import Message, OptOutEvent, ReviewRequest

from .models import (
    ActivityAccountDailyRollup,
    ActivityAccountRollup,
    ActivityDailyRollup,
    ActivityRollup,
    ActivityRollupState,
    RollupCounts,
)
from .selectors import DAILY_SERIES, ROLLUP_KEY, activity_hourly

REOPEN_HOURS = 72  # closed hours recomputed by every refresh (late-stamped events)
REBUILD_CHUNK = timedelta(days=31)  # hours recomputed per grouped pass of a rebuild
INSERT_BATCH = 5000


@dataclass(frozen=True)
class RollupRefresh:
    start: datetime  # the hours recomputed: [start, end)
    end: datetime
    rows: int  # rollup rows written


def _locked_state(now: datetime) -> tuple[ActivityRollupState, bool]:
    """The state row, locked; when missing, created holding the ``REOPEN_HOURS`` before the
    current hour (to be filled by the caller)."""
    end = utc_hour_start(now)
    return ActivityRollupState.objects.select_for_update().get_or_create(
        key=ROLLUP_KEY,
        defaults={
            "covered_from": end - timedelta(hours=REOPEN_HOURS),
            "closed_until": end,
            "refreshed_at": now,
        },
    )


def _recompute(start: datetime, end: datetime) -> int:
    """Replace the rollup's rows of ``[start, end)`` by counts from the base tables."""
    ActivityRollup.objects.filter(hour__gte=start, hour__lt=end).delete()
    written = 0
    batch: list[ActivityRollup] = []
    for row in activity_hourly(start=start, end=end):
        batch.append(row)
        if len(batch) >= INSERT_BATCH:
            written += len(ActivityRollup.objects.bulk_create(batch))
            batch = []
    written += len(ActivityRollup.objects.bulk_create(batch))
    return written


def _day_window(start: datetime, end: datetime) -> tuple[datetime, datetime]:
    """The UTC days that ``[start, end)`` touches, as ``[first, until)``."""
    return utc_day_start(start), utc_day_start(end - timedelta(hours=1)) + timedelta(days=1)


def _recompute_days(start: datetime, end: datetime) -> None:
    """Replace the daily rows of the UTC days that ``[start, end)`` touches by the sums of their
    hourly rows (whole days: a day's hours before ``start`` are summed again too), and the
    account's sums of those hours and days (``_recompute_accounts``)."""
    first, until = _day_window(start, end)
    ActivityDailyRollup.objects.filter(day__gte=first.date(), day__lt=until.date()).delete()
    sums = (
        ActivityRollup.objects.filter(hour__gte=first, hour__lt=until)
        .annotate(day=TruncDate("hour", tzinfo=UTC))
        .values("owner_id", "location_id", "day", "metric", "channel", "detail")
        .annotate(n=Sum("count"))
        .values_list("owner_id", "location_id", "day", "metric", "channel", "detail", "n")
        .order_by()
    )
    ActivityDailyRollup.objects.bulk_create(
        (
            ActivityDailyRollup(
                owner_id=owner_id,
                location_id=location_id,
                day=day,
                metric=metric,
                channel=channel,
                detail=detail,
                count=n,
            )
            for owner_id, location_id, day, metric, channel, detail, n in sums.iterator()
        ),
        batch_size=INSERT_BATCH,
    )
    _recompute_accounts(start, end)


# What an account's sums are grouped by, beside their hour or day.
_ACCOUNT_KEY = ("owner_id", "metric", "channel", "detail")


def _recompute_accounts(start: datetime, end: datetime) -> None:
    """Replace the account's sums of the hours ``[start, end)`` (``ActivityAccountRollup``)
    by the sums of their rows per location, and those of the UTC days they touch
    (``ActivityAccountDailyRollup``) by the sums of the account's hours."""
    hours = ActivityRollup.objects.filter(hour__gte=start, hour__lt=end).values(
        *_ACCOUNT_KEY, "hour"
    )
    _replace_sums(ActivityAccountRollup, "hour", {"hour__gte": start, "hour__lt": end}, hours)
    first, until = _day_window(start, end)
    days = (
        ActivityAccountRollup.objects.filter(hour__gte=first, hour__lt=until)
        .annotate(day=TruncDate("hour", tzinfo=UTC))
        .values(*_ACCOUNT_KEY, "day")
    )
    window = {"day__gte": first.date(), "day__lt": until.date()}
    _replace_sums(ActivityAccountDailyRollup, "day", window, days)


def _replace_sums(
    model: type[RollupCounts],
    period: str,
    window: dict[str, Any],
    groups: QuerySet[Any],
) -> None:
    """Replace ``model``'s rows in ``window`` by the counts of ``groups`` (rows grouped by
    ``_ACCOUNT_KEY`` and ``period``) summed."""
    model._default_manager.filter(**window).delete()
    fields = (*_ACCOUNT_KEY, period, "count")
    sums = groups.annotate(n=Sum("count")).values_list(*_ACCOUNT_KEY, period, "n").order_by()
    model._default_manager.bulk_create(
        (model(**dict(zip(fields, row, strict=True))) for row in sums.iterator()),
        batch_size=INSERT_BATCH,
    )


def _backfill(state: ActivityRollupState) -> int:
    """Re-derive the newest ``REBUILD_CHUNK`` of the hours the state marks (``[backfill_to,
    covered_from)``) and move ``covered_from`` back over them; once it reaches ``backfill_to``,
    the rollup covers everything from the first event (``covered_from`` None) unless an event
    is older than ``backfill_to``. Rows written."""
    if state.covered_from is None:
        state.backfill_to = None  # a rebuild (of any release) covered everything since
    if state.backfill_to is None or state.covered_from is None:
        return 0
    end = state.covered_from
    start = max(state.backfill_to, end - REBUILD_CHUNK)
    rows = 0
    if start < end:
        rows = _recompute(start, end)
        _recompute_days(start, end)
    state.covered_from = start
    if start <= state.backfill_to:
        found = [moment for moment in _first_events() if moment is not None]
        if not found or utc_hour_start(min(found)) >= start:
            state.covered_from = None
        state.backfill_to = None
    return rows


def _first_events() -> list[datetime | None]:
    """The earliest timestamp of each kind of event counted (each the first entry of an
    index leading with it)."""
    stamps = [*DAILY_SERIES.values()]
    return [
        *ReviewRequest.objects.aggregate(*(Min(stamp) for stamp in stamps)).values(),
        Message.objects.aggregate(first=Min("failed_at"))["first"],
        OptOutEvent.objects.aggregate(first=Min("created_at"))["first"],
    ]


def activity_rollup_refresh(*, now: datetime | None = None) -> RollupRefresh:
    """Roll up the hours closed since the last refresh, and re-read the ``REOPEN_HOURS``
    before them. The first refresh of an empty rollup covers only those hours (the readers use
    the base tables for periods that start earlier, until the rollup covers them);
    ``activity_rollup_rebuild`` backfills. Hours marked to re-derive (``backfill_to``) are
    re-derived too, ``REBUILD_CHUNK`` of them per refresh (``RollupRefresh``: ``start`` and
    ``end`` of the closed hours' window; ``rows`` of both)."""
    now = now or timezone.now()
    end = utc_hour_start(now)
    with transaction.atomic():
        state, _ = _locked_state(now)
        start = min(state.closed_until, end) - timedelta(hours=REOPEN_HOURS)
        if state.covered_from is not None:
            start = max(start, state.covered_from)
        rows = 0
        if start < end:
            rows = _recompute(start, end)
            _recompute_days(start, end)
        rows += _backfill(state)
        state.closed_until = max(state.closed_until, end)
        state.refreshed_at = now
        state.save()
    return RollupRefresh(start=start, end=end, rows=rows)


def activity_rollup_rebuild(*, now: datetime | None = None) -> RollupRefresh:
    """Recompute every hour from the first event to the start of the current one from the base
    tables (one grouped pass per ``REBUILD_CHUNK``), in one transaction: readers see the old
    rollup until it commits."""
    now = now or timezone.now()
    end = utc_hour_start(now)
    with transaction.atomic():
        state, _ = _locked_state(now)
        found = [moment for moment in _first_events() if moment is not None]
        start = utc_hour_start(min(found)) if found else end
        for model in (
            ActivityRollup,
            ActivityDailyRollup,
            ActivityAccountRollup,
            ActivityAccountDailyRollup,
        ):
            model.objects.all().delete()
        rows, chunk_start = 0, start
        while chunk_start < end:
            chunk_end = min(chunk_start + REBUILD_CHUNK, end)
            rows += _recompute(chunk_start, chunk_end)
            # The chunk's days, the first one again (its earlier hours are in the last chunk).
            _recompute_days(chunk_start, chunk_end)
            chunk_start = chunk_end
        state.covered_from = None
        state.backfill_to = None
        state.closed_until = end
        state.refreshed_at = now
        state.save()
    return RollupRefresh(start=start, end=end, rows=rows)


def activity_rollup_rederive() -> None:
    """Mark every hour rolled up so far for the refreshes to re-derive, and take them out of
    what the readers use meanwhile (they read the base tables for them: correct, slower), as
    migration 0002 did: after requests changed location (a staff move), the hours that counted
    them at the old one are wrong. Every business's hours, a ``REBUILD_CHUNK`` per refresh: a
    move is rare, and one rule re-derives them all."""
    with transaction.atomic():
        state = ActivityRollupState.objects.select_for_update().filter(key=ROLLUP_KEY).first()
        if state is None:
            return  # never refreshed: nothing rolled up
        marks = [state.backfill_to, ActivityRollup.objects.aggregate(first=Min("hour"))["first"]]
        found = [mark for mark in marks if mark is not None]
        if not found or min(found) >= state.closed_until:
            return  # no hour rolled up
        state.backfill_to = min(found)
        state.covered_from = state.closed_until
        state.save(update_fields=["backfill_to", "covered_from"])


def activity_rollup_pin_default(*, account_id: UUID, location_id: UUID) -> int:
    """Give the account's rollup rows with no location (the default location's) the location
    ``location_id`` (the default until now), before another location becomes the default, as
    reviews pins the requests they count: otherwise they would move with the default. A row of
    the same hour (day), metric, channel and detail already pinned there takes the NULL row's
    count. Opt-out events stay without a location (they are the account's); the account's
    sums (``ActivityAccountRollup``...) do not change. Holds the state
    row's lock (a refresh running meanwhile would write its window back unpinned; the next
    one re-reads it from the pinned requests). Idempotent. Rows pinned or merged."""
    with transaction.atomic():
        ActivityRollupState.objects.select_for_update().filter(key=ROLLUP_KEY).first()
        hours = _pin(ActivityRollup.objects.filter(owner_id=account_id), "hour", location_id)
        days = _pin(ActivityDailyRollup.objects.filter(owner_id=account_id), "day", location_id)
    return hours + days


def _pin(rows: QuerySet[Any], period: str, location_id: UUID) -> int:
    """``activity_rollup_pin_default`` on one level of the rollup (``rows``: one account's;
    ``period``: the level's ``hour`` or ``day``)."""

    def same_key(queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset.filter(
            **{period: OuterRef(period)},
            metric=OuterRef("metric"),
            channel=OuterRef("channel"),
            detail=OuterRef("detail"),
        )

    unpinned = rows.filter(location=None).exclude(metric=ActivityRollup.Metric.OPT_OUT)
    pinned = rows.filter(location_id=location_id)
    twin = same_key(unpinned)
    # Rows already at the location with an unpinned twin take the twin's count ...
    done = pinned.filter(Exists(twin)).update(count=F("count") + Subquery(twin.values("count")[:1]))
    # ... and the twin goes; the other unpinned rows move to the location as they are.
    unpinned.filter(Exists(same_key(pinned))).delete()
    return done + unpinned.update(location_id=location_id)
