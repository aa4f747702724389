"""The LOGGING setting: one JSON object per line on stdout (config/settings.py).

Imports no app code: the filter and formatter classes are named by their dotted paths.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# Periodic tasks scheduled more often than this (seconds) are "routine" (see logging_config).
ROUTINE_TASK_MAX_INTERVAL = 60


def routine_tasks(beat_schedule: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The tasks of CELERY_BEAT_SCHEDULE that run more often than once a minute."""
    return sorted(
        entry["task"]
        for entry in beat_schedule.values()
        if isinstance(entry["schedule"], int | float)
        and entry["schedule"] < ROUTINE_TASK_MAX_INTERVAL
    )


def logging_config(*, level: str, routine_tasks: Iterable[str]) -> dict[str, Any]:
    """Django's LOGGING dict: the root logger at ``level``, each line with its request id.

    Celery's INFO lines about each run of a routine task (beat sending it, the worker receiving
    it, its success) are left out: three lines every two seconds for the dispatcher's sweep
    alone. Their failures, retries and own lines stay; level DEBUG shows them all
    (core.logs.RoutineTaskFilter).
    """
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "request_id": {"()": "core.request_id.RequestIdLogFilter"},
            "routine_tasks": {"()": "core.logs.RoutineTaskFilter", "tasks": list(routine_tasks)},
        },
        "formatters": {"json": {"()": "core.logs.JsonFormatter"}},
        "handlers": {
            "stdout": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stdout",
                "formatter": "json",
                "filters": ["request_id", "routine_tasks"],
            }
        },
        "root": {"handlers": ["stdout"], "level": level},
        "loggers": {
            "django.request": {"level": "ERROR", "propagate": True},
            # Never log query parameters of OAuth requests at debug level.
            "oauthlib": {"level": "WARNING", "propagate": True},
            # django-oauth-toolkit logs the post-consent redirect (with its code) at debug level.
            "oauth2_provider": {"level": "INFO", "propagate": True},
            # Twilio's client logs every request and response (headers, bodies with phone
            # numbers) at INFO.
            "twilio.http_client": {"level": "WARNING", "propagate": True},
        },
    }
