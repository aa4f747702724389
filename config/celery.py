"""The Celery app. Tasks live in each app's ``tasks.py``; settings come from ``CELERY_*``."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import setup_logging, task_postrun

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


@task_postrun.connect
def _recycle_database_connections(task=None, **kwargs) -> None:
    """After each task, what Django does after each request: close this thread's connections
    that are broken or older than CONN_MAX_AGE, keep the rest (CELERY_DB_REUSE_MAX keeps
    Celery's fixup from closing them all, which cost a new connection per task). Not for eager
    runs (``task.apply()`` in the caller's thread, possibly inside its transaction)."""
    if task is None or getattr(task.request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()
