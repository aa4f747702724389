"""Line charts drawn server-side as SVG (no script, nothing from other origins): the geometry
of the staff dashboard's and the owner dashboard's charts, in SVG user units. Templates draw
it in a ``viewBox`` of ``width`` by ``height``, so the chart scales to any screen width.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True)
class Series:
    key: str
    label: str
    colour: str
    counts: list[int]  # one per point (a day or a week), oldest first

    @property
    def total(self) -> int:
        return sum(self.counts)


@dataclass(frozen=True)
class ChartLine:
    key: str
    label: str
    colour: str
    points: str  # SVG polyline points "x,y x,y ..."
    dots: list[tuple[float, float, str]]  # (x, y, tooltip)


# The x axis is labelled at about this many points, whatever their number.
X_LABELS = 6


@dataclass(frozen=True)
class Chart:
    """A line chart: one line per series, a y grid, date labels under the x axis. Each point
    is a day, or the week starting that day (``step_days=7``)."""

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
    def build(
        cls,
        days: list[date],
        series: list[Series],
        *,
        step_days: int = 1,
        width: int = WIDTH,
        height: int = HEIGHT,
        x_label_count: int = X_LABELS,
    ) -> Chart:
        top = max([1, *(max(s.counts, default=0) for s in series)])
        step = nice_step(top)
        y_max = step * -(-top // step)  # round up to a whole number of steps
        plot_w = width - cls.PAD_LEFT - cls.PAD_RIGHT
        plot_h = height - cls.PAD_TOP - cls.PAD_BOTTOM
        bottom = cls.PAD_TOP + plot_h

        def x(i: int) -> float:
            return round(cls.PAD_LEFT + plot_w * i / max(len(days) - 1, 1), 1)

        def y(value: int) -> float:
            return round(bottom - plot_h * value / y_max, 1)

        when = "on {:%d %b}" if step_days == 1 else "in the week from {:%d %b}"
        lines = []
        for s in series:
            dots = [
                (x(i), y(n), f"{s.label}: {n} {when.format(day)}")
                for i, (day, n) in enumerate(zip(days, s.counts, strict=True))
            ]
            lines.append(
                ChartLine(
                    s.key, s.label, s.colour, " ".join(f"{px},{py}" for px, py, _ in dots), dots
                )
            )
        every = max(1, round(len(days) / x_label_count))
        return cls(
            width=width,
            height=height,
            left=cls.PAD_LEFT,
            bottom=bottom,
            lines=lines,
            y_ticks=[(y(v), v) for v in range(0, y_max + 1, step)],
            x_labels=[
                (x(i), f"{day.day} {day:%b}") for i, day in enumerate(days) if i % every == 0
            ],
        )


def nice_step(top: int) -> int:
    """A grid step of 1, 2 or 5 times a power of ten giving at most five lines."""
    magnitude = 1
    while True:
        for factor in (1, 2, 5):
            if top / (factor * magnitude) <= 5:
                return factor * magnitude
        magnitude *= 10
