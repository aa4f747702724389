"""Fault tests: real worker and beat processes, PostgreSQL, a private Redis, a fake Twilio that
counts every message it accepts; then a fault in the middle of a batch:

* kill -9 of the worker's whole process group, and separately of one pool child;
* FLUSHDB of the broker;
* an immediate restart of PostgreSQL (a private cluster).

Afterwards no message was ever accepted twice by the provider; every message is ``sent`` (the
provider has it exactly once) or ``unknown`` (the provider has it at most once) and none is
left pending, queued or sending. Then ``messages_reconcile_unknown`` learns from the provider what
happened to the unknown ones, those the provider never received are resent, and in the end
every message was accepted exactly once. Every wait is bounded; every server and process the
test starts is stopped.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.test.utils import override_settings

from reviews.models import BusinessSettings, Message
from reviews.services import contact_add, message_resend, messages_reconcile_unknown
from tests.factories import ReviewSiteFactory, UserFactory
from tests.support.contacts import contact_input
from tests.support.delivery import TWILIO_SID, TWILIO_TOKEN
from tests.support.fake_providers import FakeProviders
from tests.support.private_servers import postgres_available, private_postgres, private_redis
from tests.support.processes import ROOT, ServiceProcesses, worker_processes

pytestmark = [
    pytest.mark.processes,
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.timeout(280),
    pytest.mark.django_db(transaction=True),
]

MESSAGES = 40
LATENCY = 0.25  # per provider call: a batch takes a few seconds, long enough to hit mid-way
SETTLED = {"sent", "delivered", "unknown", "failed", "cancelled"}
FROM_NUMBER = "+15005550006"


def phone(i: int) -> str:
    return f"+1415555{3000 + i:04d}"


def process_env(fake: FakeProviders, redis_url: str, **extra: str) -> dict[str, str]:
    return {
        "REDIS_URL": redis_url,
        "TWILIO_ACCOUNT_SID": TWILIO_SID,
        "TWILIO_AUTH_TOKEN": TWILIO_TOKEN,
        "TWILIO_FROM_NUMBER": FROM_NUMBER,
        "TWILIO_API_BASE_URL": fake.url,
        "DISPATCH_INTERVAL_SECONDS": "1",
        # Short leases so recovery happens within the test; the sending lease still outlives
        # the task's hard time limit, as the settings require.
        "DELIVERY_QUEUED_LEASE_SECONDS": "6",
        "DELIVERY_SENDING_LEASE_SECONDS": "12",
        "CELERY_TASK_SOFT_TIME_LIMIT": "8",
        "CELERY_TASK_TIME_LIMIT": "10",
        "DELIVERY_CONNECT_TIMEOUT": "2",
        "DELIVERY_READ_TIMEOUT": "4",
        "HEARTBEAT_INTERVAL": "3600",
        # Two pool children taking send tasks side by side, as in production: the kill lands
        # on one of them while the other may hold rows of the same batch.
        "WORKER_CONCURRENCY": "2",
        "SITE_URL": settings.SITE_URL,  # one public URL for every process, as in production
        **extra,
    }


def seed(monkeypatch) -> list[str]:
    """MESSAGES contacts due now, SMS only, no follow-ups, no quiet hours."""
    monkeypatch.setattr("reviews.services.contacts.dispatcher_kick", lambda: None)  # beat sweeps
    owner = UserFactory.create(business_name="Acme Plumbing")
    ReviewSiteFactory(owner=owner)  # without one, nothing is sent
    BusinessSettings.objects.create(
        owner=owner, send_window_applies_to="none", follow_up_offsets_hours=[]
    )
    for i in range(MESSAGES):
        contact_add(
            owner=owner,
            data=contact_input(owner, {"mobile_phone_number": phone(i), "delay_hours": 0}),
        )
    return [str(pk) for pk in Message.objects.values_list("pk", flat=True)]


def statuses(ids: list[str]) -> dict[str, str]:
    return {str(k): v for k, v in Message.objects.filter(pk__in=ids).values_list("pk", "status")}


def assert_at_most_once(fake: FakeProviders, found: dict[str, str]) -> None:
    """No message accepted twice; sent ones exactly once; nothing left in flight."""
    counts = fake.counts()
    assert set(counts) <= set(found), "the provider got messages we never had"
    assert max(counts.values(), default=0) <= 1, f"accepted twice: {counts.most_common(3)}"
    assert set(found.values()) <= {"sent", "unknown"}, found
    for message_id, status in found.items():
        if status == "sent":
            assert counts[message_id] == 1, message_id


def reconcile_and_resend(fake: FakeProviders, ids: list[str], services: ServiceProcesses) -> None:
    """Learn what happened to unknown messages; resend those the provider never received."""
    with override_settings(
        TWILIO_ACCOUNT_SID=TWILIO_SID,
        TWILIO_AUTH_TOKEN=TWILIO_TOKEN,
        TWILIO_FROM_NUMBER=FROM_NUMBER,
        TWILIO_API_BASE_URL=fake.url,
    ):
        messages_reconcile_unknown(older_than=timedelta(0))
    found = statuses(ids)
    counts = fake.counts()
    for message_id, status in found.items():
        if status == "failed":
            assert counts[message_id] == 0  # reconciled as never received: safe to resend
            message_resend(message_id=message_id)
        else:
            assert status == "sent" and counts[message_id] == 1
    services.wait_for(
        lambda: set(statuses(ids).values()) == {"sent"}, timeout=60, what="resends sent"
    )
    assert fake.counts() == dict.fromkeys(ids, 1)  # every message exactly once, in the end


@pytest.mark.parametrize("target", ["process-group", "pool-child"])
def test_kill_9_of_the_worker_mid_batch_sends_nothing_twice(tmp_path, monkeypatch, target):
    ids = seed(monkeypatch)
    with (
        private_redis() as redis,
        FakeProviders(latency=LATENCY) as fake,
        contextlib.ExitStack() as processes,
    ):
        env = process_env(fake, redis.url)
        processes.enter_context(ServiceProcesses(tmp_path / "beat", ["beat"], env=env))
        worker = processes.enter_context(ServiceProcesses(tmp_path / "worker", ["worker"], env=env))
        worker.wait_for(lambda: len(fake.calls) >= 10, timeout=90, what="a batch under way")
        main, pool = worker_processes(worker)
        if target == "process-group":
            os.killpg(os.getpgid(main), signal.SIGKILL)  # the main process and its pool
            worker.proc.wait(20)
            assert "worker.1 stopped (rc=-9)" in worker.log()
            worker = processes.enter_context(
                ServiceProcesses(tmp_path / "worker2", ["worker"], env=env)
            )
        else:
            busy = [p for p in pool if Path(f"/proc/{p}").exists()]
            os.kill(busy[0], signal.SIGKILL)  # Celery replaces it; the task is requeued
        worker.wait_for(
            lambda: set(statuses(ids).values()) <= SETTLED, timeout=120, what="all settled"
        )
        assert_at_most_once(fake, statuses(ids))
        reconcile_and_resend(fake, ids, worker)


def test_flushing_the_broker_mid_batch_loses_nothing_and_sends_nothing_twice(tmp_path, monkeypatch):
    ids = seed(monkeypatch)
    with private_redis() as redis, FakeProviders(latency=LATENCY) as fake:
        env = process_env(fake, redis.url)
        with (
            ServiceProcesses(tmp_path / "beat", ["beat"], env=env),
            ServiceProcesses(tmp_path / "worker", ["worker"], env=env) as worker,
        ):
            worker.wait_for(lambda: len(fake.calls) >= 10, timeout=90, what="a batch under way")
            redis.flushdb()  # queued send tasks, unacked tasks: all gone
            worker.wait_for(
                lambda: set(statuses(ids).values()) <= SETTLED, timeout=120, what="all settled"
            )
            assert "recovered messages past their lease" in worker.log()  # the lost tasks
            assert_at_most_once(fake, statuses(ids))
            reconcile_and_resend(fake, ids, worker)


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
