"""Celery tasks of the connector API: thin adapters over the services."""

from __future__ import annotations

from celery import shared_task

from .idempotency import idempotency_keys_purge
from .ratelimit import rate_limit_counters_purge


@shared_task(name="connector_api.tasks.purge_idempotency_keys")
def purge_idempotency_keys() -> int:
    """Hourly (beat): delete Idempotency-Key records past their TTL."""
    return idempotency_keys_purge()


@shared_task(name="connector_api.tasks.purge_rate_limit_counters")
def purge_rate_limit_counters() -> int:
    """Hourly (beat): delete database rate-limit windows that have ended (embedded default)."""
    return rate_limit_counters_purge()
