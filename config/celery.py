"""The Celery app. Tasks live in each app's ``tasks.py``; settings come from ``CELERY_*``."""

from __future__ import annotations

import os
import time

from celery import Celery
from celery.signals import setup_logging

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@setup_logging.connect
def _use_django_logging(**kwargs) -> None:
    """Worker and beat log through settings.LOGGING (JSON on stdout), like the web process."""
    from logging.config import dictConfig

    from django.conf import settings

    dictConfig(settings.LOGGING)


HEARTBEAT_CACHE_KEY = "heartbeat:worker"


@app.task(name="config.celery.heartbeat", ignore_result=True, acks_late=False)
def heartbeat(sent_at: float | None = None) -> None:
    """Beat sends this every HEARTBEAT_INTERVAL; a worker records when it ran.

    /readyz reports the age, so staff can see that beat and a worker are both alive.
    """
    from django.core.cache import cache

    cache.set(HEARTBEAT_CACHE_KEY, time.time(), timeout=None)
