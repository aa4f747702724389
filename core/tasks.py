"""Celery tasks of core: thin adapters over its modules."""

from __future__ import annotations

from celery import shared_task

from .ratelimit import rate_limit_counters_purge


@shared_task(name="core.tasks.purge_rate_limit_counters")
def purge_rate_limit_counters() -> int:
    """Hourly (beat): delete database rate-limit windows that have ended (embedded default)."""
    return rate_limit_counters_purge()
