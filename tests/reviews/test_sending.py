"""send_message: claim, call the real SDKs against fake providers, record each outcome.

Permanent rejections fail the message; transient ones go back to pending with backoff; an
unknown outcome (the request may have reached the provider) is never sent again by itself.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from reviews.models import Contact, Message, OptOutEvent, ReviewRequest
from reviews.services import message_send, messages_dispatch_due
from reviews.services.outcomes import backoff_seconds
from tests.support.delivery import (
    dispatch_and_send,
    email_request,
    sms_request,
    step,
)
from tests.support.processes import free_port

pytestmark = pytest.mark.django_db

# Statements of one SMS send with a follow-up to plan (savepoints included: the test runs in a
# transaction, so each transaction of the send is a savepoint pair). On PostgreSQL the claim is
# one statement and the sent outcome's lock and reads another (reviews/db.py); the embedded
# SQLite runs their ORM forms, three statements more.
BUDGET = {"postgresql": 12, "sqlite": 15}


def reload(obj):
    obj.refresh_from_db()
    return obj


# --- SMS through Twilio ---------------------------------------------------------------------------


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


def test_status_callback_url_carries_our_message_id(business, twilio, settings):
    request = sms_request(business)
    dispatch_and_send()
    message = step(request, 0)
    assert twilio.calls[0].status_callback == (
        f"{settings.SITE_URL}/webhooks/twilio/status/{message.pk}/"
    )
    assert twilio.twilio_messages()[0]["from"] == "+15005550006"


def test_messaging_service_sid_replaces_the_from_number(business, twilio, settings):
    settings.TWILIO_MESSAGING_SERVICE_SID = "MG" + "1" * 32
    sms_request(business)
    dispatch_and_send()
    created = twilio.twilio_messages()[0]
    assert created["messaging_service_sid"] == "MG" + "1" * 32 and created["from"] is None


def test_running_the_send_task_twice_sends_once(business, twilio):
    request = sms_request(business)
    (message_id,) = messages_dispatch_due().claimed
    assert message_send(message_id=message_id) == "sent"
    assert message_send(message_id=message_id) == "skipped"  # a redelivered task
    assert twilio.count(message_id) == 1
    assert step(request, 0).attempts == 1


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


def test_connection_refused_before_sending_is_transient(business, twilio, settings):
    settings.TWILIO_API_BASE_URL = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    request = sms_request(business)
    assert dispatch_and_send() == ["retry"]
    assert step(request, 0).status == "pending"


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


def test_request_cancelled_after_the_claim_is_not_sent(business, twilio):
    request = sms_request(business)
    (message_id,) = messages_dispatch_due().claimed
    ReviewRequest.objects.filter(pk=request.pk).update(status="cancelled", ended_at=timezone.now())
    assert message_send(message_id=message_id) == "cancelled"
    assert twilio.calls == []


def test_backoff_grows_exponentially_with_jitter_and_honours_retry_after(settings):
    settings.DELIVERY_RETRY_BASE_SECONDS = 30
    settings.DELIVERY_RETRY_MAX_SECONDS = 3600
    for attempt, ceiling in [(1, 30), (2, 60), (3, 120), (4, 240), (10, 3600)]:
        delays = {backoff_seconds(attempt) for _ in range(50)}
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(delays) > 1  # jittered
    assert backoff_seconds(1, retry_after=500) == 500


# --- e-mail through an ESP (anymail's Postmark backend) -------------------------------------------


def test_email_sent_through_the_esp_stores_its_message_id(business, postmark):
    request = email_request(business)
    assert dispatch_and_send() == ["sent"]
    first = step(request, 0)
    assert first.provider == "postmark"
    (call,) = postmark.calls
    assert call.provider_message_id == first.provider_message_id
    assert call.our_message_id == str(first.pk)  # metadata echoed back in tracking events


@pytest.mark.parametrize("script", ["406", "422"])
def test_esp_refusing_the_recipient_is_permanent(business, postmark, script):
    postmark.script("postmark", script)
    request = email_request(business)
    assert dispatch_and_send() == ["failed"]
    first = step(request, 0)
    assert (first.status, first.last_error_code) == ("failed", "recipient_refused")
    assert reload(request).status == "failed"


def test_esp_server_error_is_transient(business, postmark):
    postmark.script("postmark", "500")
    request = email_request(business)
    assert dispatch_and_send() == ["retry"]
    assert step(request, 0).status == "pending"


@pytest.mark.parametrize("script", ["hang", "drop"])
def test_esp_timeout_after_sending_is_unknown(business, postmark, script):
    postmark.script("postmark", script)
    request = email_request(business)
    assert dispatch_and_send() == ["unknown"]
    assert step(request, 0).status == "unknown"


def test_a_misconfigured_channel_is_retried_later_not_marked_unknown(business, settings):
    settings.EMAIL_BACKEND = "anymail.backends.postmark.EmailBackend"
    settings.ANYMAIL = {}  # no server token: the backend cannot even be built
    request = email_request(business)
    assert dispatch_and_send() == ["retry"]
    first = step(request, 0)
    assert (first.status, first.last_error_code) == ("pending", "channel_configuration")


# --- query budget ---------------------------------------------------------------------------------


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
