"""Send tasks carry a few rows each: the dispatcher's batching and ``messages_send``."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from reviews import db, services, tasks
from reviews.models import BusinessSettings, Message
from reviews.services import messages_dispatch_due, messages_send, sending
from reviews.services.dispatch import send_batches
from tests.support.delivery import email_request, publish_send_tasks_to, sms_request, step


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


@pytest.mark.django_db
def test_a_batch_sends_each_row_once_in_order(business, twilio):
    requests = [sms_request(business) for _ in range(3)]
    claimed = messages_dispatch_due().claimed
    assert messages_send(message_ids=claimed) == ["sent"] * 3
    assert [twilio.count(m) for m in claimed] == [1, 1, 1]
    assert all(step(r, 0).status == Message.Status.SENT for r in requests)
    sent_at = [Message.objects.get(pk=m).sent_at for m in claimed]
    assert sent_at == sorted(sent_at)  # one after the other, in the order given
    # Delivered again (acks_late after a lost worker): every row was claimed, nothing is sent.
    assert messages_send(message_ids=claimed) == ["skipped"] * 3
    assert [twilio.count(m) for m in claimed] == [1, 1, 1]


@pytest.mark.django_db
def test_the_send_task_sends_its_rows_then_kicks(monkeypatch):
    calls = []
    monkeypatch.setattr(
        services, "messages_send", lambda *, message_ids: calls.append(list(message_ids))
    )
    monkeypatch.setattr(services, "dispatcher_kick", lambda: calls.append("kick"))
    tasks.send_messages_task.run(["a", "b"])
    assert calls == [["a", "b"], "kick"]


@pytest.mark.django_db
def test_rows_after_a_send_that_gets_no_slot_go_back_to_pending_unclaimed(business, twilio):
    requests = [sms_request(business) for _ in range(3)]
    claimed = messages_dispatch_due().claimed
    with override_settings(DELIVERY_PROVIDER_CONCURRENCY=1, DELIVERY_PROVIDER_WAIT_SECONDS=0.05):
        busy = sending.ProviderSlot()
        assert busy.acquire()  # the provider is saturated: another send holds the only slot
        try:
            assert messages_send(message_ids=claimed) == ["retry"]
        finally:
            busy.release()
    assert [step(r, 0).status for r in requests] == [Message.Status.PENDING] * 3
    assert [step(r, 0).attempts for r in requests] == [0, 0, 0]
    assert sum(twilio.count(m) for m in claimed) == 0


@pytest.mark.django_db
def test_rows_that_could_overrun_the_time_limit_go_back_to_pending(
    business, twilio, settings, monkeypatch
):
    requests = [email_request(business) for _ in range(3)]
    claimed = messages_dispatch_due().claimed
    clock = iter([0.0, 1.0, 40.0])  # started; before row 2; before row 3: 40 s have passed
    monkeypatch.setattr(sending, "_clock", lambda: next(clock))
    settings.CELERY_TASK_SOFT_TIME_LIMIT = 60  # one more send may take 25 s (5 + 20)
    settings.DELIVERY_CONNECT_TIMEOUT, settings.DELIVERY_READ_TIMEOUT = 5, 20
    assert messages_send(message_ids=claimed) == ["sent", "sent"]
    rows = [Message.objects.get(pk=m) for m in claimed]
    assert [row.status for row in rows] == ["sent", "sent", "pending"]
    assert rows[2].attempts == 0
    assert len(requests) == 3


@pytest.mark.django_db
def test_rows_after_a_send_that_raised_go_back_to_pending(business, twilio, monkeypatch):
    requests = [sms_request(business) for _ in range(3)]
    claimed = messages_dispatch_due().claimed
    real_claim = db.message_claim

    def database_fails_on_the_second(*, message_id, **kwargs):
        if message_id == claimed[1]:
            raise DatabaseError("the database failed")
        return real_claim(message_id=message_id, **kwargs)

    monkeypatch.setattr(db, "message_claim", database_fails_on_the_second)
    with pytest.raises(DatabaseError):
        messages_send(message_ids=claimed)
    assert len(requests) == 3
    statuses = [Message.objects.get(pk=m).status for m in claimed]
    # The first was sent; the second is left to its lease; the third goes back at once.
    assert statuses == ["sent", "queued", "pending"]
    assert sum(twilio.count(m) for m in claimed) == 1


@pytest.mark.django_db
def test_a_batch_reads_each_owners_settings_once_and_the_next_batch_afresh(
    business, twilio, monkeypatch
):
    for _ in range(3):
        sms_request(business)
    claimed = messages_dispatch_due().claimed
    reads = []
    real = BusinessSettings.for_owner.__func__

    def counted(cls, owner):
        reads.append(owner.pk)
        return real(cls, owner)

    monkeypatch.setattr(BusinessSettings, "for_owner", classmethod(counted))
    assert messages_send(message_ids=claimed[:2]) == ["sent", "sent"]
    assert reads == [business.pk]  # two rows, one read
    # The next batch reads afresh (a change saved in between applies to it).
    assert messages_send(message_ids=claimed[2:]) == ["sent"]
    assert reads == [business.pk, business.pk]


@pytest.mark.postgres  # SQLite's claim is three statements (no data-modifying CTEs)
@pytest.mark.django_db
def test_a_batch_costs_a_fixed_number_of_statements_per_sent_row(business, twilio):
    """A guard against statements creeping back into the send path: per row the claim (which
    reads the request and contact too), the recorded outcome (the request locked, the message,
    the request's messages, the next step, the request); per batch the owner, their wording
    and their subscriptions. An owner with no webhook subscription pays no event query per
    row."""
    for _ in range(4):
        sms_request(business)
    claimed = messages_dispatch_due().claimed
    with CaptureQueriesContext(connection) as queries:
        assert messages_send(message_ids=claimed) == ["sent"] * 4
    # The test's own transaction turns each outcome's into a savepoint: not counted.
    statements = [q["sql"] for q in queries if "SAVEPOINT" not in q["sql"]]
    assert len(statements) <= 6 * 4 + 3
