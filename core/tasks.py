"""Celery tasks of core: thin adapters over its modules."""

from __future__ import annotations

from celery import shared_task

from .health import record_heartbeat
from .ratelimit_store import rate_limit_counters_purge


@shared_task(name="core.tasks.heartbeat", ignore_result=True, acks_late=False)
def heartbeat(sent_at: float | None = None) -> None:
    """Beat sends this every HEARTBEAT_INTERVAL; a worker records when it ran.

    /readyz reports the age, so staff can see that beat and a worker are both alive.
    """
    record_heartbeat()


@shared_task(name="core.tasks.purge_rate_limit_counters")
def purge_rate_limit_counters() -> int:
    """Hourly (beat): delete database rate-limit windows that have ended (embedded default)."""
    return rate_limit_counters_purge()
