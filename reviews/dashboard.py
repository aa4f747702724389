"""The staff dashboard (admin): what happened to review requests, day by day, for 30 days.

Reads only (HackSoft's selectors): a handful of aggregate queries, whatever the data size, and
the chart's geometry computed here so the page is a plain server-rendered SVG (no JavaScript,
nothing from other origins). Days are calendar days in ``settings.TIME_ZONE``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import TruncDate
from django.utils import timezone

from .models import Message, OptOutEvent, ReviewRequest

DAYS = 30

# (key, label, model field counted on its day, colour): request-level events.
SERIES = (
    ("scheduled", "Scheduled", "created_at", "#2563eb"),
    ("sent", "Sent", "sent_at", "#7c3aed"),
    ("delivered", "Delivered", "delivered_at", "#0891b2"),
    ("clicked", "Clicked", "clicked_at", "#16a34a"),
    ("failed", "Failed", "failed_at", "#dc2626"),
)


@dataclass(frozen=True)
class Series:
    key: str
    label: str
    colour: str
    counts: list[int]  # one per day, oldest first

    @property
    def total(self) -> int:
        return sum(self.counts)


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
    """Counts per day over the last ``days`` days (today included), for one owner or all."""
    now = timezone.localtime(now or timezone.now())
    first_day = now.date() - timedelta(days=days - 1)
    since = timezone.make_aware(datetime.combine(first_day, datetime.min.time()))
    day_list = [first_day + timedelta(days=i) for i in range(days)]
    index = {day: i for i, day in enumerate(day_list)}
    owned = Q(owner_id=owner_id) if owner_id else Q()

    series = []
    for key, label, stamp, colour in SERIES:
        requests = ReviewRequest.objects.filter(owned)
        if key == "delivered":
            # The portal's definition: a receipt or a click, on the day it became known.
            requests = requests.annotate(delivered_known=ReviewRequest.delivered_known_at())
            stamp = "delivered_known"
        requests = requests.filter(**{f"{stamp}__gte": since})
        if key == "scheduled":
            # Not the requests recorded as opted out on arrival: nothing was ever scheduled.
            requests = requests.exclude(messages__isnull=True)
        per_day = (
            requests.annotate(day=TruncDate(stamp))
            .values("day")
            .annotate(n=Count("pk", distinct=True))
            .values_list("day", "n")
        )
        counts = [0] * days
        for day, n in per_day:
            if day in index:
                counts[index[day]] = n
        series.append(Series(key, label, colour, counts))

    sent = ReviewRequest.objects.filter(owned, sent_at__gte=since).aggregate(
        sent=Count("pk"), clicked=Count("pk", filter=Q(clicked_at__isnull=False))
    )
    failed = Message.objects.filter(
        Q(review_request__owner_id=owner_id) if owner_id else Q(), failed_at__gte=since
    )
    # The newest error text of each code, in the same grouped query.
    newest = failed.filter(last_error_code=OuterRef("last_error_code")).order_by("-failed_at")
    reasons = (
        failed.values("last_error_code")
        .annotate(n=Count("pk"), example=Subquery(newest.values("last_error")[:1]))
        .order_by("-n", "last_error_code")[:10]
    )
    failure_reasons = [
        (row["last_error_code"] or "(no code)", (row["example"] or "")[:200], row["n"])
        for row in reasons
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


# --- The chart ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChartLine:
    label: str
    colour: str
    points: str  # SVG polyline points "x,y x,y ..."
    dots: list[tuple[float, float, str]]  # (x, y, tooltip)


@dataclass(frozen=True)
class Chart:
    """A line chart in SVG user units: one line per series, a y grid, day labels."""

    width: int
    height: int
    left: int
    bottom: float
    lines: list[ChartLine]
    y_ticks: list[tuple[float, int]]  # (y, value)
    x_labels: list[tuple[float, str]]  # (x, "3 Mar")

    WIDTH = 900
    HEIGHT = 280
    PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 44, 16, 12, 28

    @classmethod
    def build(cls, days: list[date], series: list[Series]) -> Chart:
        top = max([1, *(max(s.counts, default=0) for s in series)])
        step = _nice_step(top)
        y_max = step * -(-top // step)  # round up to a whole number of steps
        plot_w = cls.WIDTH - cls.PAD_LEFT - cls.PAD_RIGHT
        plot_h = cls.HEIGHT - cls.PAD_TOP - cls.PAD_BOTTOM
        bottom = cls.PAD_TOP + plot_h

        def x(i: int) -> float:
            return round(cls.PAD_LEFT + plot_w * i / max(len(days) - 1, 1), 1)

        def y(value: int) -> float:
            return round(bottom - plot_h * value / y_max, 1)

        lines = []
        for s in series:
            dots = [
                (x(i), y(n), f"{s.label}: {n} on {day:%d %b}")
                for i, (day, n) in enumerate(zip(days, s.counts, strict=True))
            ]
            lines.append(
                ChartLine(s.label, s.colour, " ".join(f"{px},{py}" for px, py, _ in dots), dots)
            )
        return cls(
            width=cls.WIDTH,
            height=cls.HEIGHT,
            left=cls.PAD_LEFT,
            bottom=bottom,
            lines=lines,
            y_ticks=[(y(v), v) for v in range(0, y_max + 1, step)],
            x_labels=[(x(i), f"{day.day} {day:%b}") for i, day in enumerate(days) if i % 5 == 0],
        )


def _nice_step(top: int) -> int:
    """A grid step of 1, 2 or 5 times a power of ten giving at most five lines."""
    magnitude = 1
    while True:
        for factor in (1, 2, 5):
            if top / (factor * magnitude) <= 5:
                return factor * magnitude
        magnitude *= 10
