"""reviews.services.dispatch: due rows become send tasks exactly once, a few rows each, published
after commit; leases recover lost work; the kick never raises; and (PostgreSQL) the claim of one
batch reads that batch in index order, whatever the backlog."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from reviews import tasks
from reviews.models import Message, ReviewRequest
from reviews.services import (
    dispatcher_kick,
    messages_dispatch_due,
    messages_dispatch_preview,
)
from reviews.services.dispatch import KICK_CACHE_KEY, send_batches
from tests.factories import ContactFactory
from tests.support.delivery import email_request, publish_send_tasks_to, step
from tests.support.scale_data import plan_nodes


def due_messages(owner, n: int) -> list[Message]:
    return [step(email_request(owner), 0) for _ in range(n)]


@pytest.fixture
def enqueued(monkeypatch):
    """Rows of the send tasks published after commit, in order (the broker call itself is
    Celery's business)."""
    published: list[str] = []
    publish_send_tasks_to(monkeypatch, published.extend)
    return published


@pytest.mark.django_db
def test_dispatch_claims_due_pending_rows_oldest_first_and_enqueues_after_commit(
    business, enqueued, django_capture_on_commit_callbacks
):
    first, second = due_messages(business, 2)
    Message.objects.filter(pk=first.pk).update(due_at=timezone.now() - timedelta(minutes=5))
    later = step(email_request(business, delay_hours=5), 0)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        result = messages_dispatch_due()
    assert result.claimed == [str(first.pk), str(second.pk)]
    assert enqueued == []  # nothing published before the commit
    for callback in callbacks:
        callback()
    assert enqueued == [str(first.pk), str(second.pk)]
    statuses = dict(Message.objects.filter(step=0).values_list("pk", "status"))
    assert statuses == {first.pk: "queued", second.pk: "queued", later.pk: "pending"}
    assert Message.objects.get(pk=first.pk).queued_at is not None
    assert step(first.review_request, 1).status == "planned"  # follow-ups are not due yet


@pytest.mark.django_db
def test_dispatch_respects_batch_size_limit_and_the_queued_cap(business, enqueued, settings):
    due_messages(business, 7)
    assert len(messages_dispatch_due(batch_size=2, limit=5).claimed) == 5
    settings.DISPATCH_MAX_QUEUED = 6  # five are queued already: room for one more
    assert len(messages_dispatch_due(batch_size=2).claimed) == 1
    assert Message.objects.filter(status="pending", step=0).count() == 1


@pytest.mark.django_db
def test_a_refused_publish_puts_the_rows_back_to_pending_at_once(
    business, monkeypatch, django_capture_on_commit_callbacks
):
    due_messages(business, 3)

    def broker_down(message_ids):
        raise ConnectionError("broker unreachable")

    publish_send_tasks_to(monkeypatch, broker_down)
    with django_capture_on_commit_callbacks(execute=True):
        result = messages_dispatch_due()
    assert len(result.claimed) == 3 and result.enqueue_failed == 3
    assert Message.objects.filter(step=0, status="pending").count() == 3


@pytest.mark.django_db
def test_leases_recover_rows_whose_task_or_worker_was_lost(business, enqueued, settings):
    settings.DELIVERY_QUEUED_LEASE_SECONDS = 60
    settings.DELIVERY_SENDING_LEASE_SECONDS = 120
    lost_task, lost_worker, busy, fresh = due_messages(business, 4)
    now = timezone.now()
    Message.objects.filter(pk=lost_task.pk).update(
        status="queued", updated_at=now - timedelta(seconds=61)
    )
    Message.objects.filter(pk=lost_worker.pk).update(
        status="sending", attempts=1, updated_at=now - timedelta(seconds=121)
    )
    Message.objects.filter(pk=busy.pk).update(
        status="sending", updated_at=now - timedelta(seconds=30)
    )
    result = messages_dispatch_due(now=now)
    assert (result.requeued, result.unknown) == (1, 1)
    # The lost task's row is due: claimed again in the same run, with the fresh one.
    assert sorted(result.claimed) == sorted([str(lost_task.pk), str(fresh.pk)])
    lost_worker.refresh_from_db()
    assert lost_worker.status == "unknown" and lost_worker.last_error_code == "lease_expired"
    assert Message.objects.get(pk=busy.pk).status == "sending"


@pytest.mark.django_db
def test_dry_run_preview_changes_nothing(business):
    due_messages(business, 2)
    preview = messages_dispatch_preview()
    assert len(preview.due) == 2
    assert Message.objects.filter(status="queued").count() == 0


@pytest.mark.django_db(transaction=True)
def test_two_dispatchers_at_once_claim_each_row_exactly_once(business, enqueued):
    """Both backends: SKIP LOCKED on PostgreSQL, BEGIN IMMEDIATE on SQLite."""
    messages = due_messages(business, 120)
    barrier = threading.Barrier(4)
    claimed: list[list[str]] = [[] for _ in range(4)]
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            for _ in range(10):
                claimed[i] += messages_dispatch_due(batch_size=7).claimed
        except BaseException as exc:  # asserted below
            errors.append(exc)
        finally:
            connection.close()

    with override_settings(DISPATCH_MAX_QUEUED=10_000):
        threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    assert errors == []
    everything = [m for batch in claimed for m in batch]
    assert len(everything) == len(set(everything)) == len(messages)
    assert sorted(everything) == sorted(enqueued) == sorted(str(m.pk) for m in messages)


BACKLOG = 5_000


@pytest.mark.django_db
@pytest.mark.postgres
def test_a_claim_reads_its_batch_in_index_order(business):
    now = timezone.now()
    contact = ContactFactory(owner=business)
    request = ReviewRequest.objects.create(owner=business, contact=contact, scheduled_for=now)
    Message.objects.bulk_create(
        Message(
            review_request=request,
            step=n,
            channel="email",
            status=Message.Status.PENDING,
            due_at=now - timedelta(seconds=n),
        )
        for n in range(BACKLOG)
    )
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Message._meta.db_table}")
    # The claim: due pending rows, oldest first, one batch, skipping rows another claim holds.
    claim = (
        Message.objects.filter(status=Message.Status.PENDING, due_at__lte=now)
        .select_for_update(skip_locked=True)
        .order_by("due_at", "pk")
        .values_list("pk", flat=True)[:100]
    )
    plan = json.loads(claim.explain(format="json"))[0]["Plan"]
    nodes = [node for node, _ in plan_nodes(plan)]
    assert not [n for n in nodes if n["Node Type"] in ("Sort", "Seq Scan")], nodes
    assert any(n.get("Index Name") == "reviews_message_due_claim" for n in nodes), nodes


@pytest.mark.django_db
def test_the_kick_never_raises_when_the_broker_is_down(monkeypatch):
    cache.delete(KICK_CACHE_KEY)

    def broker_down(*args, **kwargs):
        raise ConnectionError("broker unreachable")

    monkeypatch.setattr(tasks.dispatch_due_messages, "apply_async", broker_down)
    dispatcher_kick()  # logged, not raised: the beat sweep sends the message anyway


def ids(n: int) -> list[str]:
    return [f"m{i}" for i in range(n)]


@pytest.mark.parametrize(
    ("rows", "batch", "sizes"),
    [
        (0, 8, []),
        (3, 8, [1, 1, 1]),  # a few rows due: one task each, sent in parallel
        (16, 8, [1] * 16),
        (40, 8, [2] * 20),  # spread over 16 tasks or more, never larger than needed
        (100, 8, [6] * 16 + [4]),
        (500, 8, [8] * 62 + [4]),  # a backlog: DELIVERY_SEND_BATCH rows per task
        (500, 1, [1] * 500),  # 1: a task per row
    ],
)
def test_send_batches_split_rows_in_order(settings, rows, batch, sizes):
    settings.DELIVERY_SEND_BATCH = batch
    batches = send_batches(ids(rows))
    assert [len(b) for b in batches] == sizes
    assert [m for b in batches for m in b] == ids(rows)  # due order kept, nothing lost


@pytest.fixture
def published(monkeypatch):
    tasks_sent: list[list[str]] = []
    publish_send_tasks_to(monkeypatch, tasks_sent.append)
    return tasks_sent


@pytest.fixture
def backlog(business, settings):
    """Forty e-mail rows due now, with send tasks of up to 8 rows."""
    settings.DELIVERY_SEND_BATCH = 8
    for _ in range(40):
        email_request(business)


@pytest.mark.django_db
def test_a_backlog_is_published_as_batches_after_commit(
    backlog, published, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        result = messages_dispatch_due(batch_size=100)
    assert [len(batch) for batch in published] == [2] * 20
    assert [m for batch in published for m in batch] == result.claimed


@pytest.mark.django_db
def test_a_refused_publish_puts_that_batch_and_the_rest_back_to_pending(
    backlog, monkeypatch, django_capture_on_commit_callbacks
):
    accepted: list[list[str]] = []

    def broker_fails_after_three(message_ids):
        if len(accepted) == 3:
            raise ConnectionError("broker unreachable")
        accepted.append(message_ids)

    publish_send_tasks_to(monkeypatch, broker_fails_after_three)
    with django_capture_on_commit_callbacks(execute=True):
        result = messages_dispatch_due()
    published = {m for batch in accepted for m in batch}
    assert len(published) == 6 and result.enqueue_failed == 34
    statuses = dict(Message.objects.filter(step=0).values_list("pk", "status"))
    assert {str(pk) for pk, status in statuses.items() if status == "queued"} == published
    assert sum(status == "pending" for status in statuses.values()) == 34
