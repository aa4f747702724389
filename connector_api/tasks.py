"""Celery tasks of the connector API: thin adapters over the services."""

from __future__ import annotations

from celery import shared_task

from .idempotency import idempotency_keys_purge


@shared_task(name="connector_api.tasks.purge_idempotency_keys")
def purge_idempotency_keys() -> int:
    """Hourly (beat): delete Idempotency-Key records past their TTL."""
    return idempotency_keys_purge()
