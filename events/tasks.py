"""Celery tasks of the events app: adapters over ``events.services``."""

from __future__ import annotations

from celery import shared_task

from . import services


@shared_task(name="events.tasks.deliver_webhooks", acks_late=True)
def deliver_webhooks() -> None:
    """Kicked when an event commits, and by beat every minute (the safety net). Idempotent:
    rows are claimed one by one with a lease, so any number may run at once."""
    services.webhooks_deliver_due()


@shared_task(name="events.tasks.purge_events", acks_late=True)
def purge_events() -> None:
    """Beat, daily: events (and their deliveries) past their retention."""
    services.events_purge()
