"""Fault tests: real worker and beat processes, PostgreSQL, a private Redis, a fake Twilio that
counts every message it accepts; then a fault in the middle of a batch:

* kill -9 of the worker's whole process group, and separately of one pool child;
* FLUSHDB of the broker.

(The restart of PostgreSQL: test_faults_postgresql.py, a module of its own so that the two
run on different workers.) Afterwards no message was ever accepted twice by the provider;
every message is ``sent`` (the provider has it exactly once) or ``unknown`` (the provider has it
at most once) and none is left pending, queued or sending. Then ``messages_reconcile_unknown``
learns from the provider what happened to the unknown ones, those the provider never received
are resent, and in the end every message was accepted exactly once. Every wait is bounded; every
server and process the test starts is stopped.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest

from tests.support.fake_providers import FakeProviders
from tests.support.faults import (
    LATENCY,
    SETTLED,
    assert_at_most_once,
    process_env,
    reconcile_and_resend,
    seed,
    statuses,
)
from tests.support.private_servers import private_redis
from tests.support.processes import ServiceProcesses, worker_processes

pytestmark = [
    pytest.mark.processes,
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.timeout(280),
    pytest.mark.django_db(transaction=True),
]


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
