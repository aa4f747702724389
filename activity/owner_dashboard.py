"""The owner dashboard's numbers (the portal's front page): the funnel and the activity chart
of one owner's requests over a period, each event counted on the day it happened.

Both read the same series (``activity.selectors.DAILY_SERIES``): the funnel a period's totals
(``review_request_period_counts``), the chart its days or weeks
(``review_request_step_counts``), each from the rollup's closed days and hours and indexed
ranges of the base tables after them, so their cost follows the period's days, not its
requests. Days are those of the current time zone (the
owner's, set by the portal's pages); the chart's geometry comes from ``core.charts``, shared with
the staff dashboard.

Both take ``location_ids``: ``None``, the whole account; a collection, those of its locations
only (the default location's counting the requests with no location, ``accounts.access``'s
rule). Over every location the numbers are the account's.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from uuid import UUID

from django.db.models import Min
from django.utils import timezone

from accounts.models import User
from core.charts import Chart, Series
from core.times import local_day_start
from reviews.models import ReviewRequest

from . import selectors

# --- The funnel -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FunnelStep:
    key: str
    label: str
    count: int
    percent: float | None  # of the requests added in the period; None when none were
    description: str


@dataclass(frozen=True)
class Funnel:
    """What happened to the owner's requests in a period, each event counted on the day it
    happened (as the activity chart counts them): requests added, first messages sent,
    delivered, clicked, failed, opted out. Percentages are of the requests added in the period;
    in a short period a step may pass 100 % (a request added the day before it, sent in it)."""

    since: datetime | None
    added: int
    sent: int
    delivered: int
    clicked: int
    failed: int
    opted_out: int

    def percent(self, count: int) -> float | None:
        return round(100 * count / self.added, 1) if self.added else None

    def _step(self, key: str, label: str, count: int, description: str) -> FunnelStep:
        return FunnelStep(key, label, count, self.percent(count), description)

    @property
    def steps(self) -> list[FunnelStep]:
        return [
            self._step("added", "Added", self.added, "Contacts given a review request"),
            self._step("sent", "Sent", self.sent, "The first message went out"),
            self._step(
                "delivered",
                "Delivered",
                self.delivered,
                "The provider confirmed delivery, or the contact clicked",
            ),
            self._step("clicked", "Clicked", self.clicked, "Opened one of your review sites"),
        ]

    @property
    def outcomes(self) -> list[FunnelStep]:
        return [
            self._step("failed", "Failed", self.failed, "Could not be delivered"),
            self._step("opted_out", "Opted out", self.opted_out, "Asked not to be contacted"),
        ]


def period_start(*, days: int) -> datetime:
    """The start of a period of the last ``days`` days, today included: midnight of its first
    day in the current (the owner's) time zone, as the chart draws it."""
    return local_day_start(timezone.localdate() - timedelta(days=days - 1))


# Funnel field → series of selectors.DAILY_SERIES.
FUNNEL_SERIES = {
    "added": "scheduled",
    "sent": "sent",
    "delivered": "delivered",
    "clicked": "clicked",
    "failed": "failed",
    "opted_out": "opted_out",
}


def funnel(
    *, owner: User, days: int | None, location_ids: Collection[UUID] | None = None
) -> Funnel:
    """The owner's funnel over the last ``days`` days (today included, days of the current time
    zone, as the chart; all time: None), of the locations ``location_ids`` (``None``: the whole
    account), from ``selectors.review_request_period_counts``
    (the rollup's closed days and hours, indexed ranges for the rest): bounded by the period's
    days, however many requests it holds. Delivered: ``ReviewRequest.delivered_q`` (a receipt
    or a click), as the staff dashboard counts it."""
    if days:
        start = period_start(days=days)
    else:
        # Every event of a request happens at or after its creation.
        first = ReviewRequest.objects.filter(owner=owner).aggregate(first=Min("created_at"))
        if first["first"] is None:
            return Funnel(since=None, **dict.fromkeys(FUNNEL_SERIES, 0))
        start = local_day_start(timezone.localdate(first["first"]))
    counts = selectors.review_request_period_counts(
        owner_id=owner.pk,
        since=start,
        series=FUNNEL_SERIES.values(),
        scope=selectors.location_scope(owner_id=owner.pk, location_ids=location_ids),
    )
    return Funnel(
        since=start if days else None,
        **{field: counts[key] for field, key in FUNNEL_SERIES.items()},
    )


# --- The activity chart ---------------------------------------------------------------------------

# (key of selectors.DAILY_SERIES, label, colour): one line each.
ACTIVITY_SERIES = (
    ("scheduled", "Added", "#2563eb"),
    ("sent", "Sent", "#7c3aed"),
    ("clicked", "Clicked", "#16a34a"),
    ("opted_out", "Opted out", "#dc2626"),
)
# Periods longer than this are drawn per week; "all time" shows the last year, per week.
DAILY_UP_TO_DAYS = 31
ALL_TIME_WEEKS = 52


@dataclass(frozen=True)
class Activity:
    """Requests added, sent, clicked and opted out per day (or per week: ``step_days`` 7) of a
    period, each point starting on its date in ``starts``, oldest first."""

    starts: list[date]
    step_days: int
    series: list[Series]

    @property
    def weekly(self) -> bool:
        return self.step_days == 7

    def rows(self) -> list[tuple[date, list[int]]]:
        """The chart's numbers as a table: one row per point, newest first."""
        return [
            (start, [s.counts[index] for s in self.series])
            for index, start in reversed(list(enumerate(self.starts)))
        ]

    def chart(self) -> Chart:
        return Chart.build(self.starts, self.series, step_days=self.step_days)

    def compact_chart(self) -> Chart:
        """For phones: fewer user units, so the labels stay legible once scaled down."""
        return Chart.build(
            self.starts,
            self.series,
            step_days=self.step_days,
            width=400,
            height=280,
            x_label_count=3,
        )


def activity(
    *, owner: User, days: int | None, location_ids: Collection[UUID] | None = None
) -> Activity:
    """The owner's activity over the last ``days`` days (today included; ``None``: the last
    ``ALL_TIME_WEEKS`` weeks), of the locations ``location_ids`` (``None``: the whole
    account), per day, or per week when the period is longer than a month, from
    ``selectors.review_request_step_counts`` (the rollup's closed days and hours, then one
    query over indexed ranges for the hours after them, in the current time zone's days).
    Weeks end today, so the newest point is a whole week."""
    if days and days <= DAILY_UP_TO_DAYS:
        step, points = 1, days
    else:
        step, points = 7, -(-(days or ALL_TIME_WEEKS * 7) // 7)
    first_day = timezone.localdate() - timedelta(days=points * step - 1)
    counts = selectors.review_request_step_counts(
        owner_id=owner.pk,
        first_day=first_day,
        days=points * step,
        step=step,
        series=[key for key, *_ in ACTIVITY_SERIES],
        scope=selectors.location_scope(owner_id=owner.pk, location_ids=location_ids),
    )
    return Activity(
        starts=[first_day + timedelta(days=i * step) for i in range(points)],
        step_days=step,
        series=[Series(key, label, colour, counts[key]) for key, label, colour in ACTIVITY_SERIES],
    )
