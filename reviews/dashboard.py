"""The staff dashboard (admin): what happened to review requests, day by day, for 30 days.

Reads only (HackSoft's selectors): a handful of aggregate queries over indexed ranges of the
period (the per-day series and failure reasons come from ``reviews.selectors``), and
the chart's geometry from ``core.charts`` (shared with the owner dashboard), so the page is
a plain server-rendered SVG (no JavaScript, nothing from other origins). Days are calendar
days in ``settings.TIME_ZONE``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.db.models import Count, Q
from django.utils import timezone

from core.charts import Chart, Series

from . import selectors
from .models import Message, OptOutEvent, ReviewRequest

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
    clicked_of_sent: int  # ... of which the contact clicked through (at any time since)
    failure_reasons: list[tuple[str, str, int]]  # (code, an example of the error, messages)
    opt_outs: list[tuple[str, str, int]]  # (channel label, source label, count)

    @property
    def click_through_rate(self) -> float | None:
        if not self.sent_in_period:
            return None
        return round(100 * self.clicked_of_sent / self.sent_in_period, 1)

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
    *, owner_id: object | None = None, days: int = DAYS, now: datetime | None = None
) -> Dashboard:
    """Counts per day over the last ``days`` days (today included), for one owner or all.

    Every query reads an indexed time range (``reviews_request_<stamp>_day``,
    ``reviews_message_failed_day``, the requests' and opt-out events' ``created_at``), so the
    work grows with what happened in the period, not with everything stored.
    """
    now = timezone.localtime(now or timezone.now())
    first_day = now.date() - timedelta(days=days - 1)
    since = timezone.make_aware(datetime.combine(first_day, datetime.min.time()))
    day_list = [first_day + timedelta(days=i) for i in range(days)]
    owned = Q(owner_id=owner_id) if owner_id else Q()

    counts = selectors.review_request_daily_counts(
        owner_id=owner_id, first_day=first_day, days=days, series=[key for key, *_ in SERIES]
    )
    series = [Series(key, label, colour, counts[key]) for key, label, colour in SERIES]

    sent = ReviewRequest.objects.filter(owned, sent_at__gte=since).aggregate(
        sent=Count("pk"), clicked=Count("pk", filter=Q(clicked_at__isnull=False))
    )
    failure_reasons = [
        (code or "(no code)", example[:200], n)
        for code, example, n in selectors.message_failure_reasons(owner_id=owner_id, since=since)
    ]

    channel_labels = dict(Message._meta.get_field("channel").choices)
    source_labels = dict(OptOutEvent._meta.get_field("source").choices)
    opt_outs = [
        (
            channel_labels.get(row["channel"], row["channel"]),
            source_labels.get(row["source"], row["source"]),
            row["n"],
        )
        for row in OptOutEvent.objects.filter(
            owned, action=OptOutEvent.Action.OPT_OUT, created_at__gte=since
        )
        .values("channel", "source")
        .annotate(n=Count("pk"))
        .order_by("-n", "channel", "source")
    ]
    return Dashboard(
        days=day_list,
        series=series,
        sent_in_period=sent["sent"],
        clicked_of_sent=sent["clicked"],
        failure_reasons=failure_reasons,
        opt_outs=opt_outs,
    )
