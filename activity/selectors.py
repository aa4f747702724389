"""Reads of activity over time: the series per day (the staff dashboard, the owner dashboard's
chart and funnel), the rollup (``activity.models.ActivityRollup``) and the failures and opt-outs
of a period. Each reads an indexed range of its timestamp or the rollup's hours and days, for
everyone, one owner, or some of an owner's locations (``LocationScope``): the rollup's sums per
account (``ActivityAccountRollup``, ``ActivityAccountDailyRollup``) without a scope, its rows
per location with one."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Collection, Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any
from uuid import UUID

from django.db.models import (
    Count,
    DateTimeField,
    F,
    Q,
    QuerySet,
    Subquery,
    Sum,
    UUIDField,
    Value,
)
from django.db.models.functions import Cast, TruncDate, TruncHour
from django.utils import timezone

from accounts.access import locations_q
from accounts.models import Location
from core.db import serial_plans
from core.times import local_day_start, utc_day_start, utc_hour_start, utc_round_up
from reviews.models import Message, OptOutEvent, ReviewRequest

from .models import (
    ActivityAccountDailyRollup,
    ActivityAccountRollup,
    ActivityDailyRollup,
    ActivityRollup,
    ActivityRollupState,
    RollupCounts,
)

# --- Which locations -----------------------------------------------------------------------------


@dataclass(frozen=True)
class LocationScope:
    """Some locations of one account: the rows of ``ids``, and the rows with no location when
    the account's default location (``default_id``) is one of them (``accounts.access``'s
    rule). Every read taking one also keeps its owner's rows, so an id of another account's
    location matches nothing."""

    ids: frozenset[UUID]
    default_id: UUID | None

    def q(self, field: str = "location") -> Q:
        """The condition on rows whose location is ``field``."""
        return locations_q(self.ids, default_location_id=self.default_id, field=field)


def location_scope(*, owner_id: Any, location_ids: Collection[UUID] | None) -> LocationScope | None:
    """The scope of ``location_ids`` (``None``: the whole account, no scope), with the
    account's default location: one query when there are ids, none otherwise."""
    if location_ids is None:
        return None
    default = (
        Location.objects.filter(account_id=owner_id)
        .order_by("position", "created_at")
        .values_list("pk", flat=True)
        .first()
    )
    return LocationScope(ids=frozenset(location_ids), default_id=default)


def _in_scope(scope: LocationScope | None, field: str = "location") -> Q:
    return scope.q(field) if scope is not None else Q()


def _hourly_level(scope: LocationScope | None) -> QuerySet[Any]:
    """The rollup's hours to read for ``scope``: the account's sums for the whole account (and
    for everyone), a row per hour and metric; the rows per location otherwise."""
    if scope is None:
        return ActivityAccountRollup.objects.all()
    return ActivityRollup.objects.all()


def _daily_level(scope: LocationScope | None) -> QuerySet[Any]:
    """The rollup's days to read for ``scope``, as ``_hourly_level``."""
    if scope is None:
        return ActivityAccountDailyRollup.objects.all()
    return ActivityDailyRollup.objects.all()


# --- Activity per day (the staff dashboard; the owner dashboard's chart) -------------------------

# Each series counts the requests whose timestamp falls on the day ("opted_out": the contact
# opted out while the request was theirs, or it was recorded opted out on arrival).
DAILY_SERIES = {
    "scheduled": "created_at",
    "sent": "sent_at",
    "delivered": "delivered_at",
    "clicked": "clicked_at",
    "failed": "failed_at",
    "opted_out": "opted_out_at",
}
# Recorded as opted out on arrival (``contact_add`` found every channel opted out): the request
# exists only so the caller gets an id, nothing was ever scheduled. Such a request was opted out
# no later than it was created; one that was scheduled was opted out afterwards.
_OPTED_OUT_ON_ARRIVAL = Q(status=ReviewRequest.Status.OPTED_OUT, opted_out_at__lte=F("created_at"))


def _series_range(
    key: str,
    *,
    owner_id: object | None,
    since: datetime,
    until: datetime | None = None,
    scope: LocationScope | None = None,
) -> tuple[QuerySet[ReviewRequest], Any]:
    """The requests of series ``key`` whose timestamp falls in ``[since, until)`` (``until``
    None: open-ended), of ``scope``'s locations when given, and that timestamp (an
    expression): one indexed range each. The one definition of every series, for the live
    reads and for the rollup."""
    owned = (Q(owner_id=owner_id) if owner_id else Q()) & _in_scope(scope)
    if key == "delivered":
        # The portal's definition (``ReviewRequest.delivered_q``): a receipt, or a click when
        # no receipt came, at the time it became known. Two indexed ranges.
        receipt, click = Q(delivered_at__gte=since), Q(delivered_at=None, clicked_at__gte=since)
        if until is not None:
            receipt &= Q(delivered_at__lt=until)
            click &= Q(clicked_at__lt=until)
        return ReviewRequest.objects.filter(owned, receipt | click), (
            ReviewRequest.delivered_known_at()
        )
    stamp = DAILY_SERIES[key]
    bounds = {f"{stamp}__gte": since}
    if until is not None:
        bounds[f"{stamp}__lt"] = until
    requests = ReviewRequest.objects.filter(owned, **bounds)
    if key == "scheduled":
        requests = requests.exclude(_OPTED_OUT_ON_ARRIVAL)
    return requests, F(stamp)


def review_request_daily_querysets(
    *,
    owner_id: object | None,
    since: datetime,
    series: Iterable[str] | None = None,
    scope: LocationScope | None = None,
) -> dict[str, QuerySet[Any, tuple[date, int]]]:
    """Per series of ``DAILY_SERIES`` (or those of them in ``series``), the grouped query of
    ``(day, requests)`` from ``since`` on (days in the current time zone), for one owner or
    everyone (``owner_id=None``), of ``scope``'s locations when given. Each reads an indexed
    range of its timestamp: the work follows the activity of the period, not the size of the
    table."""
    wanted = DAILY_SERIES.keys() if series is None else set(series)
    querysets = {}
    for key in DAILY_SERIES:
        if key not in wanted:
            continue
        requests, stamp = _series_range(key, owner_id=owner_id, since=since, scope=scope)
        querysets[key] = (
            requests.annotate(day=TruncDate(stamp))
            .values("day")
            .annotate(n=Count("pk"))
            .values_list("day", "n")
            .order_by()
        )
    return querysets


def review_request_daily_counts(
    *,
    owner_id: object | None,
    first_day: date,
    days: int,
    series: Iterable[str] | None = None,
    rollup: RollupRead | None = None,
    scope: LocationScope | None = None,
) -> dict[str, list[int]]:
    """Per series of ``DAILY_SERIES`` (or those of them in ``series``), the requests whose
    timestamp falls on each of ``days`` calendar days (of the current time zone) from
    ``first_day``, oldest first, of ``scope``'s locations when given (``rollup``, read by the
    caller, must be of the same scope): the hours the rollup holds from it
    (``activity_rollup_read``, or ``rollup`` when the caller read it already), the rest from an
    indexed range of the requests (one query per series)."""
    since = local_day_start(first_day)
    wanted = list(DAILY_SERIES) if series is None else list(series)
    if rollup is None:
        rollup = activity_rollup_read(owner_id=owner_id, since=since, metrics=wanted, scope=scope)
    index = {first_day + timedelta(days=i): i for i in range(days)}
    result = {key: [0] * days for key in wanted}
    for metric, _, _, day, n in rollup.rows:
        if metric in result and day in index:
            result[metric][index[day]] += n
    querysets = [
        queryset.annotate(series=Value(key)).values_list("series", "day", "n")
        for key, queryset in review_request_daily_querysets(
            owner_id=owner_id, since=rollup.boundary, series=wanted, scope=scope
        ).items()
    ]
    # One query for every series: each part an indexed range of its own timestamp.
    combined = querysets[0].union(*querysets[1:], all=True) if querysets else []
    for key, day, n in combined:
        if day in index:
            result[key][index[day]] += n
    return result


def review_request_step_counts(
    *,
    owner_id: UUID,
    first_day: date,
    days: int,
    step: int,
    series: Iterable[str],
    scope: LocationScope | None = None,
) -> dict[str, list[int]]:
    """``review_request_daily_counts`` summed per ``step`` days (``days`` a multiple of it):
    per series, the requests whose timestamp falls in each period of ``step`` local days from
    ``first_day``, oldest first, of one owner (of ``scope``'s locations when given). The
    rollup's closed hours from ``ActivityDailyRollup`` where a whole UTC day falls in one
    period (``_step_rollup_rows``: one row per day, not 24 per location), from
    ``ActivityRollup`` for the UTC days a period starts inside and the hours around them; the
    rest from indexed ranges of the requests. The same numbers, a seventh of the hourly rows
    for weeks."""
    wanted = list(series)
    points = days // step
    starts = [local_day_start(first_day + timedelta(days=i * step)) for i in range(points + 1)]
    result = {key: [0] * points for key in wanted}
    boundary = activity_rollup_boundary(since=starts[0])
    if boundary > starts[0]:
        for metric, moment, n in _step_rollup_rows(
            owner_id=owner_id, starts=starts, until=boundary, metrics=wanted, scope=scope
        ):
            index = bisect_right(starts, moment) - 1
            if 0 <= index < points:
                result[metric][index] += n
    querysets = [
        queryset.annotate(series=Value(key)).values_list("series", "day", "n")
        for key, queryset in review_request_daily_querysets(
            owner_id=owner_id, since=boundary, series=wanted, scope=scope
        ).items()
    ]
    combined = querysets[0].union(*querysets[1:], all=True) if querysets else []
    for key, day, n in combined:
        index = (day - first_day).days // step
        if 0 <= index < points:
            result[key][index] += n
    return result


def _step_rollup_rows(
    *,
    owner_id: UUID,
    starts: list[datetime],
    until: datetime,
    metrics: list[str],
    scope: LocationScope | None,
) -> Iterator[tuple[str, datetime, int]]:
    """``(metric, start of the UTC day or hour, count)`` of the rollup's ``[starts[0],
    until)`` (``until``: where its closed hours end, on a whole hour), one owner's (of
    ``scope``'s locations when given), in one ``UNION ALL``: the whole UTC days no period
    starts inside (``starts``: the periods' starts, whole UTC hours) from the daily level,
    every other hour from the hourly one. Each part a range of its level's index."""
    since = starts[0]
    first_day, last_day = utc_round_up(since, day=True), utc_day_start(until)
    cut = {utc_day_start(start) for start in starts if utc_day_start(start) != start}
    whole = [
        first_day + timedelta(days=i)
        for i in range(max(0, (last_day - first_day).days))
        if first_day + timedelta(days=i) not in cut
    ]
    hours, moment = [], since
    for day in whole:
        if moment < day:
            hours.append((moment, day))
        moment = day + timedelta(days=1)
    if moment < until:
        hours.append((moment, until))
    owned = Q(owner_id=owner_id) & _rollup_scope(scope, metrics)
    parts: list[QuerySet[Any, tuple[str, datetime, int]]] = []
    if hours:
        ranges = Q()
        for start, end in hours:
            ranges |= Q(hour__gte=start, hour__lt=end)
        parts.append(
            _hourly_level(scope)
            .filter(owned, ranges, metric__in=metrics)
            .values("metric", "hour")
            .annotate(n=Sum("count"))
            .values_list("metric", "hour", "n")
            .order_by()
        )
    if whole:
        parts.append(
            _daily_level(scope)
            .filter(owned, metric__in=metrics, day__gte=whole[0].date(), day__lte=whole[-1].date())
            .exclude(day__in=[day.date() for day in sorted(cut) if whole[0] < day < whole[-1]])
            # The day's start, a UTC midnight (the connection's time zone): the hours' type.
            .annotate(at=Cast("day", DateTimeField()))
            .values("metric", "at")
            .annotate(n=Sum("count"))
            .values_list("metric", "at", "n")
            .order_by()
        )
    if parts:
        yield from parts[0].union(*parts[1:], all=True)


# --- The rollup (activity.models.ActivityRollup) --------------------------------------------------

ROLLUP_KEY = "activity"


@dataclass(frozen=True)
class RollupRead:
    """What the rollup holds of a period: ``rows`` of ``(metric, channel, detail, day, count)``
    for the hours before ``boundary``; the base tables hold the rest (from ``boundary`` on)."""

    boundary: datetime
    rows: list[tuple[str, str, str, date, int]]


def _whole_hour_offsets(since: datetime, until: datetime) -> bool:
    """Whether every local day from ``since`` to ``until`` (in the current time zone) starts
    on a whole UTC hour: then its days are made of the rollup's hours."""
    zone = timezone.get_current_timezone()
    moment = since
    while moment <= until + timedelta(days=1):
        offset = moment.astimezone(zone).utcoffset()
        if offset is None or offset.total_seconds() % 3600:
            return False
        moment += timedelta(days=1)
    return utc_hour_start(since) == since


def activity_rollup_closed_until(*, since: datetime, now: datetime | None = None) -> datetime:
    """Where the rollup's closed hours from ``since`` (the start of a UTC hour) end, or
    ``since`` itself when the rollup does not hold that hour."""
    now = now or timezone.now()
    state = ActivityRollupState.objects.filter(key=ROLLUP_KEY).first()
    if state is None or (state.covered_from is not None and state.covered_from > since):
        return since
    return max(since, min(state.closed_until, now))


def activity_rollup_boundary(*, since: datetime, now: datetime | None = None) -> datetime:
    """Where the rollup stops serving a period of local days that starts at ``since``: the end
    of its closed hours, or ``since`` itself (everything read from the base tables) when it does
    not hold the period's start, or when the current time zone's days are not made of whole UTC
    hours."""
    now = now or timezone.now()
    if not _whole_hour_offsets(since, now):
        return since
    return activity_rollup_closed_until(since=since, now=now)


def review_request_period_counts(
    *, owner_id: UUID, since: datetime, series: Iterable[str], scope: LocationScope | None = None
) -> dict[str, int]:
    """Per series of ``DAILY_SERIES`` in ``series``, one owner's requests (of ``scope``'s
    locations when given) whose timestamp falls from ``since`` on (the period's totals, as
    ``review_request_daily_counts`` would sum them): the rollup's closed hours from the first
    whole UTC hour at or after ``since`` (its whole UTC days from ``ActivityDailyRollup``, the
    hours around them from ``ActivityRollup``), and indexed ranges of the requests for the rest
    (before that hour, after the rollup's last). Two queries whatever the period's size (the
    state, one ``UNION ALL``): the work follows the period's days, not its requests."""
    wanted = list(series)
    first_hour = utc_round_up(since)
    closed_until = activity_rollup_closed_until(since=first_hour)
    parts: list[QuerySet[Any, tuple[str, int]]] = []
    ranges: list[tuple[datetime, datetime | None]] = [(since, None)]
    if closed_until > first_hour:
        days_from, days_until = utc_round_up(first_hour, day=True), utc_day_start(closed_until)
        hours = [(first_hour, closed_until)]
        if days_from < days_until:
            hours = [(first_hour, days_from), (days_until, closed_until)]
            parts.append(
                _totals(
                    _daily_level(scope).filter(
                        day__gte=days_from.date(), day__lt=days_until.date()
                    ),
                    owner_id,
                    wanted,
                    scope,
                )
            )
        parts += [
            _totals(
                _hourly_level(scope).filter(hour__gte=start, hour__lt=end),
                owner_id,
                wanted,
                scope,
            )
            for start, end in hours
            if start < end
        ]
        ranges = [(since, first_hour), (closed_until, None)]
    parts += [
        _series_range(key, owner_id=owner_id, since=start, until=end, scope=scope)[0]
        .annotate(series=Value(key))
        .values("series")
        .annotate(n=Count("pk"))
        .values_list("series", "n")
        .order_by()
        for key in wanted
        for start, end in ranges
        if end is None or start < end
    ]
    totals = dict.fromkeys(wanted, 0)
    if not parts:
        return totals
    combined = parts[0].union(*parts[1:], all=True)
    # A scope's rows per location and hour cost PostgreSQL's estimate a heap page each: at a
    # million requests the statement crossed the parallel threshold, and two workers cost ~10
    # ms for a 1-2 ms read (docs/benchmarks.md, "Teams and locations (issue 37)").
    with serial_plans() if scope is not None else nullcontext():
        rows = list(combined)
    for key, n in rows:
        totals[key] += n
    return totals


def _totals(
    rows: QuerySet[RollupCounts], owner_id: UUID, metrics: list[str], scope: LocationScope | None
) -> QuerySet[Any, tuple[str, int]]:
    """``(metric, count)`` of one owner's rollup rows (hourly or daily) among ``rows``, of
    ``scope``'s locations when given."""
    return (
        rows.filter(_rollup_scope(scope, metrics), owner_id=owner_id, metric__in=metrics)
        .values("metric")
        .annotate(n=Sum("count"))
        .values_list("metric", "n")
        .order_by()
    )


def _rollup_scope(scope: LocationScope | None, metrics: Collection[str]) -> Q:
    """The rollup rows of ``scope``'s locations, and the account's opt-out events when
    ``metrics`` has them (they have no location: every location counts them; left out
    otherwise, so a location's read is one range of its own index)."""
    if scope is None:
        return Q()
    if ActivityRollup.Metric.OPT_OUT in metrics:
        return scope.q() | Q(metric=ActivityRollup.Metric.OPT_OUT)
    return scope.q()


def activity_rollup_read(
    *,
    owner_id: object | None,
    since: datetime,
    metrics: list[str],
    scope: LocationScope | None = None,
) -> RollupRead:
    """The rollup's counts of ``metrics`` per local day (current time zone) and channel and
    detail, from ``since`` to its boundary (``activity_rollup_boundary``), for one owner or
    everyone, of ``scope``'s locations when given: one query for the state, one over the
    rollup's ``hour`` range when it serves."""
    boundary = activity_rollup_boundary(since=since)
    if boundary <= since:
        return RollupRead(boundary=since, rows=[])
    rows = activity_rollup_rows(
        owner_id=owner_id, since=since, until=boundary, metrics=metrics, scope=scope
    )
    return RollupRead(boundary=boundary, rows=list(rows))


def activity_rollup_rows(
    *,
    owner_id: object | None,
    since: datetime,
    until: datetime,
    metrics: list[str],
    scope: LocationScope | None = None,
) -> QuerySet[Any, tuple[str, str, str, date, int]]:
    """The rollup's ``(metric, channel, detail, day, count)`` of ``[since, until)``, days in
    the current time zone, of ``scope``'s locations when given (their opt-out events: the
    account's): a range of ``hour``. Without a scope, the account's sums
    (``ActivityAccountRollup``: everyone's by ``activity_account_hour``, one owner's by its
    unique key); with one, the rows per location (``reviews_rollup_location_hour``, the
    default location's by ``reviews_rollup_owner_hour``)."""
    owned = (Q(owner_id=owner_id) if owner_id else Q()) & _rollup_scope(scope, metrics)
    rows: QuerySet[Any, tuple[str, str, str, date, int]] = (
        _hourly_level(scope)
        .filter(owned, hour__gte=since, hour__lt=until, metric__in=metrics)
        .annotate(day=TruncDate("hour"))
        .values("metric", "channel", "detail", "day")
        .annotate(n=Sum("count"))
        .values_list("metric", "channel", "detail", "day", "n")
        .order_by()
    )
    return rows


# A row of ``activity_hourly_querysets``: (owner, location, hour, channel, detail, count).
HourlyRow = tuple[UUID, UUID | None, datetime, str, str, int]


def activity_hourly_querysets(
    *, start: datetime, end: datetime
) -> dict[str, QuerySet[Any, HourlyRow]]:
    """Every owner's events of ``[start, end)`` per location and UTC hour, one grouped query
    over an indexed range per kind, each of rows ``(owner, location, hour, channel, detail,
    count)``: each series of ``DAILY_SERIES`` (``_series_range``, the live reads' definition),
    the messages that failed (per channel and error code; their request's location) and the
    opt-out events (per channel and source; no location: they are the account's). A location
    is the requests' own (NULL: the default's)."""
    querysets: dict[str, QuerySet[Any, HourlyRow]] = {}
    for key in DAILY_SERIES:
        requests, stamp = _series_range(key, owner_id=None, since=start, until=end)
        querysets[key] = (
            requests.annotate(at=TruncHour(stamp, tzinfo=UTC), channel=Value(""), detail=Value(""))
            .values("owner_id", "location_id", "at", "channel", "detail")
            .annotate(n=Count("pk"))
            .values_list("owner_id", "location_id", "at", "channel", "detail", "n")
            .order_by()
        )
    querysets[ActivityRollup.Metric.MESSAGE_FAILED] = (
        Message.objects.filter(failed_at__gte=start, failed_at__lt=end)
        .annotate(at=TruncHour("failed_at", tzinfo=UTC))
        .values(
            "review_request__owner_id",
            "review_request__location_id",
            "at",
            "channel",
            "last_error_code",
        )
        .annotate(n=Count("pk"))
        .values_list(
            "review_request__owner_id",
            "review_request__location_id",
            "at",
            "channel",
            "last_error_code",
            "n",
        )
        .order_by()
    )
    querysets[ActivityRollup.Metric.OPT_OUT] = (
        OptOutEvent.objects.filter(
            action=OptOutEvent.Action.OPT_OUT, created_at__gte=start, created_at__lt=end
        )
        .annotate(
            at=TruncHour("created_at", tzinfo=UTC),
            place=Value(None, output_field=UUIDField()),
        )
        .values("owner_id", "place", "at", "channel", "source")
        .annotate(n=Count("pk"))
        .values_list("owner_id", "place", "at", "channel", "source", "n")
        .order_by()
    )
    return querysets


def activity_hourly(*, start: datetime, end: datetime) -> Iterator[ActivityRollup]:
    """``activity_hourly_querysets``'s rows as unsaved rollup rows."""
    for metric, queryset in activity_hourly_querysets(start=start, end=end).items():
        for owner_id, location_id, hour, channel, detail, n in queryset:
            yield ActivityRollup(
                owner_id=owner_id,
                location_id=location_id,
                hour=hour,
                metric=metric,
                channel=channel,
                detail=detail,
                count=n,
            )


def opt_out_counts(
    *, owner_id: object | None, since: datetime, rollup: RollupRead
) -> list[tuple[str, str, int]]:
    """``(channel, source, opt-outs)`` from ``since`` on, most first: the rollup's hours
    (``rollup``, read by the caller) and the audit's ``created_at`` range after them. The
    account's, whatever locations the rollup was read for: an opt-out has no location."""
    totals: dict[tuple[str, str], int] = {}
    for metric, channel, source, _, n in rollup.rows:
        if metric == ActivityRollup.Metric.OPT_OUT:
            totals[channel, source] = totals.get((channel, source), 0) + n
    owned = Q(owner_id=owner_id) if owner_id else Q()
    live = (
        OptOutEvent.objects.filter(
            owned, action=OptOutEvent.Action.OPT_OUT, created_at__gte=rollup.boundary
        )
        .values("channel", "source")
        .annotate(n=Count("pk"))
        .values_list("channel", "source", "n")
        .order_by()
    )
    for channel, source, n in live:
        totals[channel, source] = totals.get((channel, source), 0) + n
    return sorted(
        ((channel, source, n) for (channel, source), n in totals.items()),
        key=lambda row: (-row[2], row[0], row[1]),
    )


def message_failures_by_code(
    *, owner_id: object | None, since: datetime, scope: LocationScope | None = None
) -> QuerySet[Message, tuple[str, int]]:
    """``(code, messages)`` of the messages that failed since ``since`` (of requests at
    ``scope``'s locations when given), most frequent first: an indexed range of
    ``failed_at``, grouped."""
    return (
        _failed_since(owner_id, since, scope)
        .values("last_error_code")
        .annotate(n=Count("pk"))
        .order_by("-n", "last_error_code")
        .values_list("last_error_code", "n")
    )


def message_newest_failures(
    *,
    owner_id: object | None,
    since: datetime,
    codes: list[str],
    scope: LocationScope | None = None,
) -> QuerySet[Message, tuple[str, str]]:
    """``(code, error text)`` of the newest failure since ``since`` of each of ``codes``, in
    one query: each code's newest row is found by walking the ``failed_at`` index backwards
    (an uncorrelated subquery per code, run once), never a subquery per failed row."""
    failed = _failed_since(owner_id, since, scope)
    newest = Q(pk__in=[])
    for code in codes:
        newest |= Q(
            pk=Subquery(
                failed.filter(last_error_code=code).order_by("-failed_at", "-pk").values("pk")[:1]
            )
        )
    return Message.objects.filter(newest).values_list("last_error_code", "last_error")


def message_failure_reasons(
    *,
    owner_id: object | None,
    since: datetime,
    limit: int = 10,
    rollup: RollupRead | None = None,
    scope: LocationScope | None = None,
) -> list[tuple[str, str, int]]:
    """The ``limit`` commonest error codes of messages that failed since ``since`` (of
    requests at ``scope``'s locations when given): (code, the newest error text of that code,
    messages), most frequent first. The counts come from the rollup's hours (``rollup``, read
    by the caller for the same scope; none when None) and the messages' indexed ``failed_at``
    range after them; the texts from one query."""
    boundary = rollup.boundary if rollup is not None else since
    totals: dict[str, int] = {}
    for metric, _, code, _, n in rollup.rows if rollup is not None else []:
        if metric == ActivityRollup.Metric.MESSAGE_FAILED:
            totals[code] = totals.get(code, 0) + n
    for code, n in message_failures_by_code(owner_id=owner_id, since=boundary, scope=scope):
        totals[code] = totals.get(code, 0) + n
    top = sorted(totals.items(), key=lambda item: (-item[1], item[0]))[:limit]
    if not top:
        return []
    newest = dict(
        message_newest_failures(
            owner_id=owner_id, since=since, codes=[code for code, _ in top], scope=scope
        )
    )
    return [(code, newest.get(code, ""), n) for code, n in top]


def _failed_since(
    owner_id: object | None, since: datetime, scope: LocationScope | None = None
) -> QuerySet[Message]:
    failed = Message.objects.filter(failed_at__gte=since)
    if owner_id:
        failed = failed.filter(Q(review_request__owner_id=owner_id))
    if scope is not None:
        failed = failed.filter(scope.q("review_request__location"))
    return failed
