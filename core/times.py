"""How times are written: for machines (the API's answers and the events' bodies) and for
people (the sentences of API messages and errors), one format each; and the starts of the
hours and days that periods are counted in."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from django.utils import timezone


def iso_utc(moment: datetime) -> str:
    """ISO 8601 in UTC to the second, with ``Z`` (``2026-05-01T14:00:00Z``)."""
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def human_utc(moment: datetime) -> str:
    """In UTC to the minute, for a sentence (``2026-05-01 14:00 UTC``)."""
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def utc_hour_start(moment: datetime) -> datetime:
    """The start of the UTC hour ``moment`` falls in."""
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def utc_day_start(moment: datetime) -> datetime:
    """The start (midnight) of the UTC day ``moment`` falls in."""
    return utc_hour_start(moment).replace(hour=0)


def utc_round_up(moment: datetime, *, day: bool = False) -> datetime:
    """``moment`` if it starts a UTC hour (``day``: a UTC day), else the start of the next one."""
    start = utc_day_start(moment) if day else utc_hour_start(moment)
    return start if start == moment else start + (timedelta(days=1) if day else timedelta(hours=1))


def local_day_start(day: date) -> datetime:
    """Midnight of ``day`` in the current time zone (the owner's, in the portal)."""
    return timezone.make_aware(datetime.combine(day, datetime.min.time()))
