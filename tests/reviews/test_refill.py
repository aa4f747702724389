"""During a backlog the queue is refilled as fast as workers empty it, not once per interval."""

from __future__ import annotations

import re

from config.celery import app
from reviews import services, tasks
from tests.support.processes import ROOT


def test_a_send_task_kicks_the_dispatcher_after_sending(monkeypatch):
    calls = []
    monkeypatch.setattr(services, "message_send", lambda *, message_id: calls.append(message_id))
    monkeypatch.setattr(services, "dispatcher_kick", lambda: calls.append("kick"))
    tasks.send_message_task.run("00000000-0000-0000-0000-000000000001")
    assert calls == ["00000000-0000-0000-0000-000000000001", "kick"]


def test_dispatch_tasks_travel_on_their_own_queue():
    route = app.amqp.router.route({}, "reviews.tasks.dispatch_due_messages")
    assert route["queue"].name == "dispatch"
    send_route = app.amqp.router.route({}, "reviews.tasks.send_message_task")
    assert send_route["queue"].name == "celery"


def test_the_procfile_worker_consumes_both_queues():
    worker = next(
        line for line in (ROOT / "Procfile").read_text().splitlines() if line.startswith("worker:")
    )
    queues = re.search(r"--queues (\S+)", worker).group(1).split(",")
    assert set(queues) == {"celery", "dispatch"}
