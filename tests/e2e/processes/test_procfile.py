"""The Procfile's processes really run and really pass tasks: no eager mode anywhere."""

from __future__ import annotations

import time

import pytest
import requests
from django.core.cache import cache
from django.core.cache.backends.filebased import FileBasedCache

from core.health import HEARTBEAT_CACHE_KEY
from tests.support.processes import ServiceProcesses

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]


def _heartbeat_reader(svc: ServiceProcesses, embedded: bool):
    if embedded:
        # The children's file cache lives in their own VAR_DIR.
        return FileBasedCache(str(svc.var_dir / "cache"), {})
    return cache


@pytest.mark.parametrize(
    "embedded",
    [
        pytest.param(True, id="embedded-broker"),
        pytest.param(False, id="redis", marks=pytest.mark.redis),
    ],
)
def test_beat_and_worker_pass_a_task_through_the_broker(tmp_path, embedded):
    if not embedded:
        cache.delete(HEARTBEAT_CACHE_KEY)
    with ServiceProcesses(
        tmp_path, ["worker", "beat"], embedded_broker=embedded, env={"HEARTBEAT_INTERVAL": "1"}
    ) as svc:
        reader = _heartbeat_reader(svc, embedded)
        started = time.time()
        beat_at = svc.wait_for(
            lambda: (reader.get(HEARTBEAT_CACHE_KEY) or 0) > started,
            timeout=90,
            what="a heartbeat sent by beat and run by the worker",
        )
        assert beat_at
        log = svc.log()
    assert ("filesystem://" if embedded else "redis://") in log
    # Each run of a task this frequent would be three INFO lines (beat sent it, the worker
    # received it, it succeeded): left out of the logs (core.logs.RoutineTaskFilter).
    heartbeat_lines = [
        line
        for line in log.splitlines()
        if "core.tasks.heartbeat" in line and ("succeeded" in line or "received" in line)
    ]
    assert heartbeat_lines == []
    assert "Sending due task heartbeat" not in log


def test_make_run_processes_serve_and_stop_together_on_ctrl_c(tmp_path):
    with ServiceProcesses(
        tmp_path, ["web", "worker", "beat"], embedded_broker=True, env={"HEARTBEAT_INTERVAL": "1"}
    ) as svc:
        health = svc.wait_for(
            lambda: requests.get(f"{svc.base_url}/healthz", timeout=2), what="/healthz"
        )
        assert health.status_code == 200
        assert health.json() == {"status": "ok"}

        ready = svc.wait_for(
            lambda: (
                (r := requests.get(f"{svc.base_url}/readyz", timeout=5)).json()[
                    "worker_heartbeat_age_s"
                ]
                is not None
                and r
            ),
            timeout=90,
            what="/readyz reporting a worker heartbeat",
        )
        assert ready.status_code == 200
        assert ready.json()["checks"]["broker"]["transport"] == "filesystem"

        returncode = svc.stop()  # SIGINT to the group, as Ctrl-C in a terminal
    assert returncode is not None
    assert svc.proc.poll() is not None
    log = svc.log()
    for name in ("web.1", "worker.1", "beat.1"):
        assert f"{name} stopped" in log
