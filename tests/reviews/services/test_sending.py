"""Sending (reviews.services.sending): claim, call the real SDKs against fake providers, record
each outcome; a send task's batch of rows; at most DELIVERY_PROVIDER_CONCURRENCY provider calls
at once per process.

Permanent rejections fail the message; transient ones go back to pending with backoff; an
unknown outcome (the request may have reached the provider) is never sent again by itself.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import DatabaseError, connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from reviews import db
from reviews.models import (
    BusinessSettings,
    Contact,
    Message,
    OptOutEvent,
    ReviewRequest,
    ReviewSite,
)
from reviews.services import (
    message_send,
    messages_dispatch_due,
    messages_send,
    review_site_add,
    sending,
)
from tests.support.delivery import dispatch_and_send, email_request, reload, sms_request, step
from tests.support.processes import free_port

# Statements of one SMS send with a follow-up to plan (savepoints included: the test runs in a
# transaction, so each transaction of the send is a savepoint pair). On PostgreSQL the claim is
# one statement and the sent outcome's lock and reads another (reviews/db.py); the embedded
# SQLite runs their ORM forms, three statements more.
BUDGET = {"postgresql": 12, "sqlite": 15}


# --- SMS through Twilio ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_sms_sent_stores_twilio_sid_and_plans_the_first_follow_up(business, twilio):
    request = sms_request(business, phone="+14155552671")
    assert dispatch_and_send() == ["sent"]
    first = step(request, 0)
    assert first.status == "sent" and first.attempts == 1
    assert first.provider == "twilio" and first.provider_message_id.startswith("SM")
    assert first.to_address == "+14155552671"
    (call,) = twilio.calls
    assert call.our_message_id == str(first.pk) and call.to == "+14155552671"
    assert request.public_url() in call.body and "Acme Plumbing" in call.body
    assert reload(request).status == "sent" and request.sent_at == first.sent_at
    follow_up = step(request, 1)
    assert follow_up.status == "pending"
    assert follow_up.due_at == first.sent_at + timedelta(hours=72)
    assert step(request, 2).status == "planned"


@pytest.mark.django_db
def test_status_callback_url_carries_our_message_id(business, twilio, settings):
    request = sms_request(business)
    dispatch_and_send()
    message = step(request, 0)
    assert twilio.calls[0].status_callback == (
        f"{settings.SITE_URL}/webhooks/twilio/status/{message.pk}/"
    )
    assert twilio.twilio_messages()[0]["from"] == "+15005550006"


@pytest.mark.django_db
def test_messaging_service_sid_replaces_the_from_number(business, twilio, settings):
    settings.TWILIO_MESSAGING_SERVICE_SID = "MG" + "1" * 32
    sms_request(business)
    dispatch_and_send()
    created = twilio.twilio_messages()[0]
    assert created["messaging_service_sid"] == "MG" + "1" * 32 and created["from"] is None


@pytest.mark.django_db
def test_running_the_send_task_twice_sends_once(business, twilio):
    request = sms_request(business)
    (message_id,) = messages_dispatch_due().claimed
    assert message_send(message_id=message_id) == "sent"
    assert message_send(message_id=message_id) == "skipped"  # a redelivered task
    assert twilio.count(message_id) == 1
    assert step(request, 0).attempts == 1


@pytest.mark.django_db
@pytest.mark.parametrize(("script", "code"), [("21211", "21211"), ("21614", "21614")])
def test_invalid_or_landline_number_fails_the_message_and_the_request(
    business, twilio, script, code
):
    twilio.script("twilio", script)
    request = sms_request(business)
    assert dispatch_and_send() == ["failed"]
    first = step(request, 0)
    assert (first.status, first.last_error_code) == ("failed", code)
    assert "Twilio 400" in first.last_error
    request = reload(request)
    assert (request.status, request.ended_reason) == ("failed", "delivery_failed")
    assert set(request.messages.values_list("status", flat=True)) == {"failed", "cancelled"}
    assert dispatch_and_send() == []  # nothing is retried


@pytest.mark.django_db
def test_twilio_unsubscribed_error_opts_the_contact_out_of_sms(business, twilio):
    twilio.script("twilio", "21610")
    request = sms_request(business)
    dispatch_and_send()
    contact = Contact.objects.get(pk=request.contact_id)
    assert contact.sms_opted_out_at is not None
    assert contact.sms_opt_out_source == Contact.OptOutSource.SMS_REPLY
    event = OptOutEvent.objects.get()
    assert (event.channel, event.action, event.address) == ("sms", "opt_out", contact.phone)
    assert reload(request).status in ("failed", "opted_out")


@pytest.mark.django_db
@pytest.mark.parametrize("script", ["503", "500", "429", "401"])
def test_transient_rejection_goes_back_to_pending_with_backoff(business, twilio, script):
    twilio.script("twilio", script)
    request = sms_request(business)
    before = timezone.now()
    assert dispatch_and_send() == ["retry"]
    first = step(request, 0)
    assert (first.status, first.attempts) == ("pending", 1)
    # attempt 1: base 30 s x 2^0, jittered to 15-30 s
    assert before + timedelta(seconds=15) <= first.due_at <= timezone.now() + timedelta(seconds=30)
    assert reload(request).status == "scheduled"
    assert dispatch_and_send() == []  # not due yet


@pytest.mark.django_db
def test_transient_rejections_stop_after_the_maximum_attempts(business, twilio, settings):
    settings.DELIVERY_MAX_ATTEMPTS = 3
    twilio.script("twilio", "503", "503", "503")
    request = sms_request(business)
    for expected in ("retry", "retry", "failed"):
        Message.objects.filter(review_request=request, status="pending").update(
            due_at=timezone.now()
        )
        assert dispatch_and_send() == [expected]
    first = step(request, 0)
    assert first.attempts == 3 and first.status == "failed"
    assert first.last_error.startswith("gave up after 3 attempts")
    assert twilio.attempts(str(first.pk)) == 3 and twilio.count(str(first.pk)) == 0


@pytest.mark.django_db
def test_connection_refused_before_sending_is_transient(business, twilio, settings):
    settings.TWILIO_API_BASE_URL = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    request = sms_request(business)
    assert dispatch_and_send() == ["retry"]
    assert step(request, 0).status == "pending"


@pytest.mark.django_db
@pytest.mark.parametrize("script", ["hang", "drop", "504"])
def test_outcome_unknown_is_recorded_and_never_resent(business, twilio, script):
    twilio.script("twilio", script)
    request = sms_request(business)
    assert dispatch_and_send() == ["unknown"]
    first = step(request, 0)
    assert first.status == "unknown" and first.unknown_at is not None
    assert first.to_address == request.contact.phone  # captured for reconciling
    assert reload(request).status == "sending"  # the request waits for the answer
    assert step(request, 1).status == "planned"
    Message.objects.filter(pk=first.pk).update(due_at=timezone.now() - timedelta(days=1))
    assert dispatch_and_send() == []
    assert twilio.attempts(str(first.pk)) == 1


@pytest.mark.django_db
def test_contact_who_opted_out_after_the_claim_is_not_texted(business, twilio):
    request = sms_request(business)
    (message_id,) = messages_dispatch_due().claimed
    # The opt-out lands between the dispatcher's claim and the send task (a raw update: the
    # service would also have cancelled the queued row).
    Contact.objects.filter(pk=request.contact_id).update(sms_opted_out_at=timezone.now())
    assert message_send(message_id=message_id) == "cancelled"
    first = step(request, 0)
    assert first.status == "cancelled" and "opted out of SMS" in first.last_error
    assert twilio.calls == []
    assert reload(request).status == "opted_out"


@pytest.mark.django_db
def test_request_cancelled_after_the_claim_is_not_sent(business, twilio):
    request = sms_request(business)
    (message_id,) = messages_dispatch_due().claimed
    ReviewRequest.objects.filter(pk=request.pk).update(status="cancelled", ended_at=timezone.now())
    assert message_send(message_id=message_id) == "cancelled"
    assert twilio.calls == []


# --- e-mail through an ESP (anymail's Postmark backend) -------------------------------------------


@pytest.mark.django_db
def test_email_sent_through_the_esp_stores_its_message_id(business, postmark):
    request = email_request(business)
    assert dispatch_and_send() == ["sent"]
    first = step(request, 0)
    assert first.provider == "postmark"
    (call,) = postmark.calls
    assert call.provider_message_id == first.provider_message_id
    assert call.our_message_id == str(first.pk)  # metadata echoed back in tracking events


@pytest.mark.django_db
@pytest.mark.parametrize("script", ["406", "422"])
def test_esp_refusing_the_recipient_is_permanent(business, postmark, script):
    postmark.script("postmark", script)
    request = email_request(business)
    assert dispatch_and_send() == ["failed"]
    first = step(request, 0)
    assert (first.status, first.last_error_code) == ("failed", "recipient_refused")
    assert reload(request).status == "failed"


@pytest.mark.django_db
def test_esp_server_error_is_transient(business, postmark):
    postmark.script("postmark", "500")
    request = email_request(business)
    assert dispatch_and_send() == ["retry"]
    assert step(request, 0).status == "pending"


@pytest.mark.django_db
@pytest.mark.parametrize("script", ["hang", "drop"])
def test_esp_timeout_after_sending_is_unknown(business, postmark, script):
    postmark.script("postmark", script)
    request = email_request(business)
    assert dispatch_and_send() == ["unknown"]
    assert step(request, 0).status == "unknown"


@pytest.mark.django_db
def test_a_misconfigured_channel_is_retried_later_not_marked_unknown(business, settings):
    settings.EMAIL_BACKEND = "anymail.backends.postmark.EmailBackend"
    settings.ANYMAIL = {}  # no server token: the backend cannot even be built
    request = email_request(business)
    assert dispatch_and_send() == ["retry"]
    first = step(request, 0)
    assert (first.status, first.last_error_code) == ("pending", "channel_configuration")


# --- query budget ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_sending_an_sms_stays_within_its_query_budget(
    business, twilio, django_assert_max_num_queries
):
    """A send's statements are a fixed handful whatever the data (the dispatcher benchmark's
    CPU per message follows them): the claim's transaction, the template, the record's
    transaction with the follow-up planned. The business settings come from the cache."""
    sms_request(business)
    assert dispatch_and_send() == ["sent"]  # warms the settings cache
    sms_request(business)
    (message_id,) = messages_dispatch_due().claimed
    with django_assert_max_num_queries(BUDGET[connection.vendor]):
        assert message_send(message_id=message_id) == "sent"


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


class CountingChannel:
    """The real Twilio channel, watched: how many of its calls overlap."""

    def __init__(self, real):
        self.real = real
        self.lock = threading.Lock()
        self.now = self.peak = 0

    def send(self, sms):
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        try:
            return self.real.send(sms)
        finally:
            with self.lock:
                self.now -= 1


@pytest.mark.django_db(transaction=True)
def test_no_more_provider_calls_at_once_than_the_slots(business, twilio, monkeypatch):
    twilio.latency = 0.15
    real = sending.sms_channel()
    watched = CountingChannel(real)
    monkeypatch.setattr(sending, "sms_channel", lambda: watched)
    requests = [sms_request(business) for _ in range(6)]
    claimed = messages_dispatch_due().claimed
    results: list[str] = []

    def run(message_id):
        try:
            results.append(message_send(message_id=message_id))
        finally:
            connection.close()

    with override_settings(DELIVERY_PROVIDER_CONCURRENCY=2, DELIVERY_PROVIDER_WAIT_SECONDS=5):
        threads = [threading.Thread(target=run, args=(m,)) for m in claimed]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        elapsed = time.monotonic() - started

    assert sorted(results) == ["sent"] * 6
    assert watched.peak == 2
    assert elapsed >= 3 * 0.15  # six calls through two slots: three rounds at least
    assert all(step(r, 0).status == Message.Status.SENT for r in requests)
    assert all(twilio.count(m) == 1 for m in claimed)


@pytest.mark.django_db
def test_a_send_that_gets_no_slot_in_time_goes_back_to_pending_unclaimed(business, twilio):
    request = sms_request(business)
    (message_id,) = messages_dispatch_due().claimed
    with override_settings(DELIVERY_PROVIDER_CONCURRENCY=1, DELIVERY_PROVIDER_WAIT_SECONDS=0.05):
        busy = sending.ProviderSlot()
        assert busy.acquire()  # another send holds the only slot
        try:
            assert message_send(message_id=message_id) == "retry"
        finally:
            busy.release()
        message = step(request, 0)
        assert (message.status, message.attempts) == (Message.Status.PENDING, 0)
        assert twilio.count(message_id) == 0
        # The next sweep dispatches it again and, with the slot free, it goes out.
        assert messages_dispatch_due().claimed == [message_id]
        assert message_send(message_id=message_id) == "sent"


@pytest.mark.django_db
def test_a_slot_comes_back_whatever_the_provider_answered(business, twilio):
    with override_settings(DELIVERY_PROVIDER_CONCURRENCY=1, DELIVERY_PROVIDER_WAIT_SECONDS=0.05):
        twilio.script("twilio", "503", "21211")
        outcomes = []
        for _ in range(3):
            sms_request(business)
            (message_id,) = messages_dispatch_due().claimed
            outcomes.append(message_send(message_id=message_id))
        assert outcomes == ["retry", "failed", "sent"]  # none of them found the slot taken
        slot = sending.ProviderSlot()
        assert slot.acquire()
        slot.release()
        slot.release()  # a second release does nothing (a BoundedSemaphore would raise)


def test_without_a_cap_a_slot_is_always_there(settings):
    settings.DELIVERY_PROVIDER_CONCURRENCY = 0
    slots = [sending.ProviderSlot() for _ in range(100)]
    assert all(slot.acquire() for slot in slots)


@pytest.mark.django_db
def test_a_message_queued_before_the_last_site_was_removed_waits_again(business, twilio):
    request = sms_request(business)
    claimed = messages_dispatch_due().claimed
    ReviewSite.objects.filter(owner=business).delete()

    assert [message_send(message_id=message_id) for message_id in claimed] == ["held"]

    first = step(request, 0)
    assert (first.status, first.due_at) == ("planned", None)
    assert first.waiting_for_review_site and "review site" in first.last_error
    assert reload(request).status == "scheduled"
    assert twilio.calls == []

    review_site_add(owner=business, url="https://g.page/r/acme/review")
    assert dispatch_and_send() == ["sent"]
    assert len(twilio.calls) == 1
