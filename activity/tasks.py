"""Celery tasks of the activity app: adapters over ``activity.services``."""

from __future__ import annotations

from celery import shared_task

from . import services


# The name it had in reviews, before the rollup moved here: beat's schedule sends it by that
# name, and a worker of this release still runs one queued by the previous release.
@shared_task(name="reviews.tasks.refresh_activity_rollup", acks_late=True)
def refresh_activity_rollup() -> None:
    """Beat, every few minutes: roll up the hours closed since the last run (the dashboards)."""
    services.activity_rollup_refresh()
