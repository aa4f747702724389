"""How times are written: for machines (the API's answers and the events' bodies) and for
people (the sentences of API messages and errors), one format each."""

from __future__ import annotations

from datetime import UTC, datetime


def iso_utc(moment: datetime) -> str:
    """ISO 8601 in UTC to the second, with ``Z`` (``2026-05-01T14:00:00Z``)."""
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def human_utc(moment: datetime) -> str:
    """In UTC to the minute, for a sentence (``2026-05-01 14:00 UTC``)."""
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
