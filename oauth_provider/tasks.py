"""Scheduled OAuth housekeeping (beat: ``oauth-clear-expired``, hourly)."""

from __future__ import annotations

from celery import shared_task

from . import services


@shared_task(acks_late=True, soft_time_limit=300, time_limit=360)
def clear_expired_tokens() -> None:
    """Thin adapter; the rules live in services.tokens_clear_expired (idempotent)."""
    services.tokens_clear_expired()
