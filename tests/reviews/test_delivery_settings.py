"""Delivery settings: safe defaults, and combinations that would break the promises refused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    "import django; django.setup(); from django.conf import settings as s; "
    "print(s.EMAIL_BACKEND, s.DISPATCH_INTERVAL_SECONDS, s.ANYMAIL['REQUESTS_TIMEOUT'], "
    "s.CELERY_BEAT_SCHEDULE['dispatch-due-messages']['schedule'])"
)


def probe(tmp_path, **env: str) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DELIVERY_", "CELERY_", "DISPATCH_", "DATABASE_URL", "REDIS_URL"))
    }
    clean.update(DJANGO_SETTINGS_MODULE="config.settings", VAR_DIR=str(tmp_path), **env)
    return subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_defaults_write_email_to_the_outbox_and_dispatch_every_two_seconds(tmp_path):
    result = probe(tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "providers.outbox.OutboxEmailBackend",
        "2.0",
        "(5.0,",
        "20.0)",
        "2.0",
    ]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DELIVERY_SENDING_LEASE_SECONDS": "90"}, "must be longer than CELERY_TASK_TIME_LIMIT"),
        ({"DELIVERY_READ_TIMEOUT": "58"}, "below CELERY_TASK_SOFT_TIME_LIMIT"),
        (
            {"DELIVERY_PROVIDER_CONCURRENCY": "4", "DELIVERY_PROVIDER_WAIT_SECONDS": "40"},
            "below CELERY_TASK_SOFT_TIME_LIMIT",
        ),
    ],
)
def test_a_sending_lease_or_timeout_that_would_break_at_most_once_is_refused(
    tmp_path, env, message
):
    result = probe(tmp_path, **env)
    assert result.returncode != 0
    assert message in result.stderr
