"""A send batch reads and renders its rows ahead, before a provider slot is taken.

``send_messages`` with several rows reads them all in one statement and renders them; each row
is then claimed by an UPDATE that also checks what the claim's read used to check (request
active, contact reachable), so the slot holds the claim's writes and the call only. Whatever
changes between the read ahead and the claim must still be seen, as it was by the claim's own
read: these tests make each change in that window.
"""

from __future__ import annotations

import logging

import pytest
from django.core import mail
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from reviews import rendering
from reviews.models import Contact, Message, ReviewRequest
from reviews.services import dispatch_due, send_messages, sending
from tests.delivery.conftest import email_request, new_phone, sms_request

pytestmark = pytest.mark.django_db

READ_AHEAD = "WHERE m.id IN ("


def _request_of(message_id: str) -> ReviewRequest:
    return Message.objects.select_related("review_request").get(pk=message_id).review_request


def _after_the_read_ahead(monkeypatch, change) -> None:
    """Run ``change`` once, right after the batch's first read ahead."""
    real = sending._read_ahead
    done = []

    def read_then_change(message_ids):
        real(message_ids)
        if not done:
            done.append(True)
            change()

    monkeypatch.setattr(sending, "_read_ahead", read_then_change)


def test_a_batch_reads_its_rows_in_one_statement_and_claims_them_without_reading(business, twilio):
    for name in ("Ann", "Bob", "Cy"):
        sms_request(business, first_name=name)
    claimed = dispatch_due().claimed

    with CaptureQueriesContext(connection) as queries:
        assert send_messages(message_ids=claimed) == ["sent"] * 3

    statements = [query["sql"] for query in queries.captured_queries]
    assert sum(READ_AHEAD in sql for sql in statements) == 1
    assert sum("RETURNING attempts, to_address" in sql for sql in statements) == 3
    assert not any("WHERE m.id = " in sql for sql in statements)  # no claim read its row
    calls = {call.our_message_id: call for call in twilio.calls}
    for message_id in claimed:
        message = Message.objects.get(pk=message_id)
        request = message.review_request
        assert (message.status, message.attempts) == (Message.Status.SENT, 1)
        assert message.to_address == request.contact.phone == calls[message_id].to
        assert request.contact.first_name in calls[message_id].body
        assert f"/r/{request.token}" in calls[message_id].body
        request.refresh_from_db()
        assert request.sending_at == message.sending_at  # started by the claim
    assert sending._batch.ready is None  # nothing outlives a batch


def test_a_single_send_claims_and_reads_in_one_round_trip_as_before(business, twilio):
    sms_request(business)
    (message_id,) = dispatch_due().claimed
    with CaptureQueriesContext(connection) as queries:
        assert send_messages(message_ids=[message_id]) == ["sent"]
    statements = [query["sql"] for query in queries.captured_queries]
    assert not any(READ_AHEAD in sql for sql in statements)
    assert sum("WHERE m.id = " in sql for sql in statements) == 1


@pytest.mark.parametrize(
    ("make_request", "opted_out_at"),
    [(sms_request, "sms_opted_out_at"), (email_request, "email_opted_out_at")],
)
def test_an_opt_out_after_the_read_ahead_stops_that_message(
    business, twilio, monkeypatch, make_request, opted_out_at
):
    """Set on the contact only (an opt-out also cancels the queued row, which the claim's
    ``queued`` condition alone would stop): the claim's own check must see it."""
    for _ in range(3):
        make_request(business)
    claimed = dispatch_due().claimed
    contact = _request_of(claimed[1]).contact
    _after_the_read_ahead(
        monkeypatch,
        lambda: Contact.objects.filter(pk=contact.pk).update(**{opted_out_at: timezone.now()}),
    )

    assert send_messages(message_ids=claimed) == ["sent", "cancelled", "sent"]

    reached = [call.to for call in twilio.calls] + [to for email in mail.outbox for to in email.to]
    expected = []
    for message_id in (claimed[0], claimed[2]):
        message = Message.objects.get(pk=message_id)
        expected.append(message.review_request.contact.address_for(message.channel))
    assert sorted(reached) == sorted(expected)
    stopped = Message.objects.get(pk=claimed[1])
    assert stopped.status == Message.Status.CANCELLED
    assert "opted out" in stopped.last_error


def test_a_request_ended_after_the_read_ahead_is_not_sent(business, twilio, monkeypatch):
    for _ in range(2):
        sms_request(business)
    claimed = dispatch_due().claimed
    _after_the_read_ahead(
        monkeypatch,
        lambda: ReviewRequest.objects.filter(pk=_request_of(claimed[0]).pk).update(
            status=ReviewRequest.Status.CANCELLED, ended_at=timezone.now()
        ),
    )

    assert send_messages(message_ids=claimed) == ["cancelled", "sent"]

    assert [twilio.count(m) for m in claimed] == [0, 1]
    assert "the request ended" in Message.objects.get(pk=claimed[0]).last_error


def test_a_number_changed_after_the_read_ahead_is_the_one_texted(business, twilio, monkeypatch):
    for _ in range(2):
        sms_request(business)
    claimed = dispatch_due().claimed
    changed = new_phone()
    _after_the_read_ahead(
        monkeypatch,
        lambda: Contact.objects.filter(pk=_request_of(claimed[1]).contact_id).update(phone=changed),
    )

    assert send_messages(message_ids=claimed) == ["sent", "sent"]

    (call,) = [call for call in twilio.calls if call.our_message_id == claimed[1]]
    assert call.to == changed
    assert Message.objects.get(pk=claimed[1]).to_address == changed


def test_a_row_cancelled_after_the_read_ahead_is_skipped(business, twilio, monkeypatch):
    for _ in range(2):
        sms_request(business)
    claimed = dispatch_due().claimed
    _after_the_read_ahead(
        monkeypatch, lambda: _request_of(claimed[0]).cancel_open_messages(at=timezone.now())
    )

    assert send_messages(message_ids=claimed) == ["skipped", "sent"]
    assert [twilio.count(m) for m in claimed] == [0, 1]


def test_a_row_that_cannot_be_rendered_is_recorded_by_its_own_claim(business, twilio, monkeypatch):
    for _ in range(3):
        sms_request(business)
    claimed = dispatch_due().claimed
    real = rendering.render_sms

    def broken_for_the_second(message, *args, **kwargs):
        if str(message.pk) == claimed[1]:
            raise ValueError("a broken template")
        return real(message, *args, **kwargs)

    monkeypatch.setattr(rendering, "render_sms", broken_for_the_second)

    assert send_messages(message_ids=claimed) == ["sent", "failed", "sent"]

    failed = Message.objects.get(pk=claimed[1])
    assert (failed.status, failed.last_error_code, failed.attempts) == ("failed", "render_error", 1)
    assert twilio.count(claimed[1]) == 0


def test_a_read_ahead_older_than_its_limit_is_not_used(business, twilio, monkeypatch):
    for _ in range(3):
        sms_request(business)
    claimed = dispatch_due().claimed
    monkeypatch.setattr(sending, "READ_AHEAD_MAX_AGE", 0.0)
    single = []
    real = sending._claim
    monkeypatch.setattr(sending, "_claim", lambda message_id: single.append(1) or real(message_id))

    assert send_messages(message_ids=claimed) == ["sent"] * 3
    assert len(single) == 3  # each row claimed and read afresh


def test_a_redelivered_batch_reads_nothing_ahead_and_sends_nothing(business, twilio):
    for _ in range(2):
        sms_request(business)
    claimed = dispatch_due().claimed
    assert send_messages(message_ids=claimed) == ["sent", "sent"]
    assert send_messages(message_ids=claimed) == ["skipped", "skipped"]
    assert [twilio.count(m) for m in claimed] == [1, 1]


@pytest.mark.django_db(transaction=True)
def test_a_failed_read_ahead_leaves_each_row_to_its_own_claim(
    business, twilio, monkeypatch, caplog
):
    for _ in range(2):
        sms_request(business)
    claimed = dispatch_due().claimed
    monkeypatch.setattr(
        sending, "_read_ahead_statement", lambda ids: ("SELECT * FROM no_such_table", [])
    )
    with caplog.at_level(logging.WARNING, logger=sending.logger.name):
        assert send_messages(message_ids=claimed) == ["sent", "sent"]
    assert "could not read a send batch ahead" in caplog.text
    assert [twilio.count(m) for m in claimed] == [1, 1]


def test_a_row_gone_before_its_address_is_read_again_is_skipped(business, twilio, monkeypatch):
    """The number changed after the read ahead, and the row was deleted (its contact erased)
    between the claim and the read that follows it: nothing to send, nothing raised."""
    for _ in range(2):
        sms_request(business)
    claimed = dispatch_due().claimed
    request = _request_of(claimed[0])
    real = sending._claim_ready

    def claim_between_changes(message_id):
        if message_id == claimed[0]:
            Contact.objects.filter(pk=request.contact_id).update(phone=new_phone())
            result = real(message_id)
            Message.objects.filter(pk=message_id).delete()
            return result
        return real(message_id)

    monkeypatch.setattr(sending, "_claim_ready", claim_between_changes)

    assert send_messages(message_ids=claimed) == ["skipped", "sent"]
    assert [twilio.count(m) for m in claimed] == [0, 1]
