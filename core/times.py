"""How times are written for machines: the API's answers and the events' bodies."""

from __future__ import annotations

from datetime import UTC, datetime


def iso_utc(moment: datetime) -> str:
    """ISO 8601 in UTC to the second, with ``Z`` (``2026-05-01T14:00:00Z``)."""
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
