"""The delivery tasks (reviews.tasks). The broker is never a calendar: no task is published with
an eta/countdown of more than a few minutes (Redis redelivers unacknowledged tasks after its
visibility timeout and forgets everything on a flush; due work lives in Message.due_at instead).
During a backlog the queue is refilled as fast as workers empty it, not once per interval: a
send task kicks the dispatcher after sending, and dispatch tasks travel on their own queue.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from celery import Celery
from celery.app.task import Task
from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from config.celery import app
from reviews import services, tasks
from reviews.models import Message
from reviews.services import (
    message_resend,
    message_send,
    messages_dispatch_due,
    messages_reconcile_unknown,
)
from reviews.services.dispatch import KICK_CACHE_KEY
from tests.support.delivery import sms_request, step
from tests.support.processes import ROOT

LIMIT = timedelta(seconds=300)


@pytest.fixture
def published(monkeypatch):
    """Every task publication, with its options (recorded instead of sent)."""
    calls: list[tuple[str, tuple, dict]] = []

    def apply_async(self, args=None, kwargs=None, **options):
        calls.append((self.name, tuple(args or ()), options))

    def send_task(self, name, args=None, kwargs=None, **options):
        calls.append((name, tuple(args or ()), options))

    monkeypatch.setattr(Task, "apply_async", apply_async)
    monkeypatch.setattr(Celery, "send_task", send_task)
    return calls


def _assert_short(calls) -> None:
    now = timezone.now()
    for name, _, options in calls:
        countdown = options.get("countdown")
        assert countdown is None or countdown <= LIMIT.total_seconds(), (name, options)
        eta = options.get("eta")
        if isinstance(eta, str):
            eta = datetime.fromisoformat(eta)
        assert eta is None or eta <= now + LIMIT, (name, options)


@pytest.mark.django_db(transaction=True)
def test_the_whole_flow_publishes_no_long_eta_or_countdown(business, twilio, published):
    cache.delete(KICK_CACHE_KEY)
    first = sms_request(business)  # on commit: the dispatch kick
    twilio.script("twilio", "503", "hang")
    for _ in range(3):
        for message_id in messages_dispatch_due().claimed:  # on commit: one send task per row
            message_send(message_id=message_id)  # retry with backoff, then unknown
        Message.objects.filter(status="pending", step=0).update(due_at=timezone.now())
    message = step(first, 0)
    assert message.status == "unknown"
    messages_reconcile_unknown(
        older_than=timedelta(0)
    )  # found at the fake Twilio: sent, plans step 1
    message.refresh_from_db()
    assert message.status == "sent"
    Message.objects.filter(pk=message.pk).update(status="failed")
    cache.delete(KICK_CACHE_KEY)
    message_resend(message_id=str(message.pk))  # on commit: a kick
    names = [name for name, _, _ in published]
    assert "reviews.tasks.dispatch_due_messages" in names
    assert "reviews.tasks.send_messages_task" in names
    _assert_short(published)


def test_beat_schedule_entries_carry_no_long_countdown():
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        options = entry.get("options", {})
        assert "eta" not in options
        assert options.get("countdown", 0) <= LIMIT.total_seconds()


def test_no_source_file_schedules_a_task_with_eta_or_countdown():
    pattern = re.compile(r"\b(countdown|eta)\s*=")
    offenders = []
    for path in ROOT.rglob("*.py"):
        relative = path.relative_to(ROOT)
        if relative.parts[0] in {".venv", "var", "tests", "node_modules", "integrations"}:
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{relative}:{number}: {line.strip()}")
    assert offenders == []


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


@pytest.mark.django_db
def test_the_send_task_sends_its_rows_then_kicks(monkeypatch):
    calls = []
    monkeypatch.setattr(
        services, "messages_send", lambda *, message_ids: calls.append(list(message_ids))
    )
    monkeypatch.setattr(services, "dispatcher_kick", lambda: calls.append("kick"))
    tasks.send_messages_task.run(["a", "b"])
    assert calls == [["a", "b"], "kick"]
