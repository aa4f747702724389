"""The staff dashboard (admin): what happened to review requests, day by day, for 30 days.

Reads only (HackSoft's selectors, ``activity.selectors``): the closed hours of the period from
the rollup (``ActivityRollup``: one query over its hour range, whatever the size of the base
tables), the hours after them from indexed ranges of the base tables, and the chart's geometry
from ``core.charts`` (shared with the owner dashboard), so the page is a plain server-rendered
SVG (no JavaScript, nothing from other origins). Days are calendar days in
``settings.TIME_ZONE``. Every number counts events by their own time: the click-through rate is
the requests clicked in the period over those sent in the period, so a closed day never changes.
For one business, or one location of a business: its requests and their messages (the default
location's including those with no location); opt-outs are the business's (a contact opts out of
every location at once).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from uuid import UUID

from django.utils import timezone

from core.charts import Chart, Series
from core.times import local_day_start
from reviews.models import Message, OptOutEvent

from . import selectors
from .models import ActivityRollup

DAYS = 30

# (key of selectors.DAILY_SERIES, label, colour): request-level events, one line each.
SERIES = (
    ("scheduled", "Scheduled", "#2563eb"),
    ("sent", "Sent", "#7c3aed"),
    ("delivered", "Delivered", "#0891b2"),
    ("clicked", "Clicked", "#16a34a"),
    ("failed", "Failed", "#dc2626"),
)


@dataclass(frozen=True)
class Dashboard:
    days: list[date]
    series: list[Series]
    sent_in_period: int  # requests whose first message went out in the period
    clicked_in_period: int  # requests whose contact clicked through in the period
    failure_reasons: list[tuple[str, str, int]]  # (code, an example of the error, messages)
    opt_outs: list[tuple[str, str, int]]  # (channel label, source label, count)

    @property
    def click_through_rate(self) -> float | None:
        if not self.sent_in_period:
            return None
        return round(100 * self.clicked_in_period / self.sent_in_period, 1)

    @property
    def opt_out_total(self) -> int:
        return sum(count for _, _, count in self.opt_outs)

    def rows(self) -> list[tuple[date, list[int]]]:
        """The chart's data as a table: one row per day, newest first."""
        return [
            (day, [s.counts[index] for s in self.series])
            for index, day in reversed(list(enumerate(self.days)))
        ]

    def chart(self) -> Chart:
        return Chart.build(self.days, self.series)


def staff_dashboard(
    *,
    owner_id: object | None = None,
    location_id: UUID | None = None,
    days: int = DAYS,
    now: datetime | None = None,
) -> Dashboard:
    """Counts per day over the last ``days`` days (today included), for one owner or all, and
    for one location of that owner (``location_id``; needs ``owner_id``) or all of them.

    The rollup's closed hours of the period in one query (and one for its state), the hours
    after them from indexed time ranges of the base tables (``reviews_request_<stamp>_day``,
    ``reviews_message_failed_day``, the requests' and opt-out events' ``created_at``), so the
    work follows the length of the period, not what is stored (nor how many locations). Ten
    queries at most, and one for the account's default location with ``location_id``.
    """
    if location_id is not None and owner_id is None:
        raise ValueError("location_id is one location of owner_id's")
    scope = (
        selectors.location_scope(owner_id=owner_id, location_ids=[location_id])
        if location_id is not None
        else None
    )
    now = timezone.localtime(now or timezone.now())
    first_day = now.date() - timedelta(days=days - 1)
    since = local_day_start(first_day)
    day_list = [first_day + timedelta(days=i) for i in range(days)]
    keys = [key for key, *_ in SERIES]
    rollup = selectors.activity_rollup_read(
        owner_id=owner_id,
        since=since,
        metrics=[*keys, ActivityRollup.Metric.MESSAGE_FAILED, ActivityRollup.Metric.OPT_OUT],
        scope=scope,
    )
    counts = selectors.review_request_daily_counts(
        owner_id=owner_id,
        first_day=first_day,
        days=days,
        series=keys,
        rollup=rollup,
        scope=scope,
    )
    series = [Series(key, label, colour, counts[key]) for key, label, colour in SERIES]
    failure_reasons = [
        (code or "(no code)", example[:200], n)
        for code, example, n in selectors.message_failure_reasons(
            owner_id=owner_id, since=since, rollup=rollup, scope=scope
        )
    ]
    channel_labels = dict(Message._meta.get_field("channel").choices or [])
    source_labels = dict(OptOutEvent._meta.get_field("source").choices or [])
    opt_outs = [
        (channel_labels.get(channel, channel), source_labels.get(source, source), n)
        for channel, source, n in selectors.opt_out_counts(
            owner_id=owner_id, since=since, rollup=rollup
        )
    ]
    return Dashboard(
        days=day_list,
        series=series,
        sent_in_period=sum(counts["sent"]),
        clicked_in_period=sum(counts["clicked"]),
        failure_reasons=failure_reasons,
        opt_outs=opt_outs,
    )
