"""Fault test: an immediate restart of PostgreSQL (a private cluster) in the middle of a batch of
the real worker and beat processes; no message accepted twice, none lost (the checks of
test_faults.py, from tests/support/faults.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import psycopg
import pytest

from tests.support.fake_providers import FakeProviders
from tests.support.faults import (
    LATENCY,
    MESSAGES,
    SETTLED,
    assert_at_most_once,
    process_env,
)
from tests.support.private_servers import postgres_available, private_postgres, private_redis
from tests.support.processes import ROOT, ServiceProcesses

pytestmark = [
    pytest.mark.processes,
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.timeout(280),
    pytest.mark.django_db(transaction=True),
]

SEED_SCRIPT = """
import django
django.setup()
from accounts.models import User
from reviews.models import BusinessSettings, ReviewSite
from contact_input.normalize import clean_contact_input
from reviews.services import contact_add
owner = User.objects.create_user(email="owner@example.com", business_name="Acme Plumbing")
ReviewSite.objects.create(owner=owner, url="https://g.page/r/acme/review", label="Google")
BusinessSettings.objects.create(owner=owner, send_window_applies_to="none",
                                follow_up_offsets_hours=[])
for i in range({n}):
    contact_add(owner=owner, data=clean_contact_input({{
        "mobile_phone_number": "+1415555%04d" % (3000 + i), "delay_hours": 0}},
        default_region=owner.default_region))
"""


@pytest.mark.skipif(not postgres_available(), reason="needs initdb and root (runuser)")
def test_restarting_postgresql_mid_batch_loses_nothing_and_sends_nothing_twice(tmp_path):
    with (
        private_postgres() as postgres,
        private_redis() as redis,
        FakeProviders(latency=LATENCY) as fake,
    ):
        admin = psycopg.connect(postgres.url("postgres"), autocommit=True)
        admin.execute("CREATE DATABASE delivery_faults")
        admin.close()
        env = {
            **process_env(fake, redis.url),
            "DATABASE_URL": postgres.url("delivery_faults"),
        }

        def manage(*args: str, script: str | None = None) -> str:
            command = (
                [sys.executable, "-c", script]
                if script
                else [
                    sys.executable,
                    "manage.py",
                    *args,
                ]
            )
            result = subprocess.run(
                command,
                cwd=ROOT,
                env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
                capture_output=True,
                text=True,
                timeout=180,
            )
            assert result.returncode == 0, result.stderr[-3000:]
            return result.stdout

        manage("migrate", "--noinput")
        manage(script=SEED_SCRIPT.format(n=MESSAGES))

        def rows() -> dict[str, str]:
            with psycopg.connect(postgres.url("delivery_faults"), connect_timeout=3) as conn:
                return {
                    str(pk): status
                    for pk, status in conn.execute("SELECT id, status FROM reviews_message")
                }

        def settled() -> bool:
            try:
                return set(rows().values()) <= SETTLED
            except psycopg.OperationalError:
                return False

        with (
            ServiceProcesses(tmp_path / "beat", ["beat"], env=env) as beat,
            ServiceProcesses(tmp_path / "worker", ["worker"], env=env) as worker,
        ):
            worker.wait_for(lambda: len(fake.calls) >= 10, timeout=90, what="a batch under way")
            postgres.restart_immediately()
            assert "database system was interrupted" in postgres.log()  # crash recovery ran
            worker.wait_for(settled, timeout=150, what="all settled after the restart")
            found = rows()
            assert len(found) == MESSAGES
            assert_at_most_once(fake, found)
            # Learn what happened to the unknown ones and resend those never received, with
            # the same commands staff would use.
            manage("reconcile_unknown", "--older-than-minutes", "0")
            for message_id, status in rows().items():
                if status == "failed":
                    assert fake.count(message_id) == 0
                    manage("resend_message", message_id)
            worker.wait_for(
                lambda: set(rows().values()) == {"sent"}, timeout=60, what="resends sent"
            )
            assert fake.counts() == dict.fromkeys(found, 1)
            assert beat.proc.poll() is None, "beat survived the database restart"
        (tmp_path / "fake-calls.json").write_text(json.dumps(fake.snapshot(), indent=1))
