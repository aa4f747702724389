"""Provider webhooks: verified (403 without a valid signature), tolerant (unknown ids answer
200), idempotent (replays change nothing), and never moving a message backwards."""

from __future__ import annotations

import base64
import json

import pytest
from django.test import Client
from twilio.request_validator import RequestValidator

from reviews.models import Contact, OptOutEvent
from tests.support.delivery import (
    TWILIO_TOKEN,
    dispatch_and_send,
    email_request,
    sms_request,
    step,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _twilio_auth_token(settings):
    """Webhooks are verified with the auth token (sending without the SID stays in the outbox)."""
    settings.TWILIO_AUTH_TOKEN = TWILIO_TOKEN


def twilio_post(client: Client, settings, path: str, data: dict, *, signature: str | None = None):
    if signature is None:
        signature = RequestValidator(TWILIO_TOKEN).compute_signature(settings.SITE_URL + path, data)
    headers = {"X-Twilio-Signature": signature} if signature else {}
    return client.post(path, data, headers=headers)


def status_path(message) -> str:
    return f"/webhooks/twilio/status/{message.pk}/"


@pytest.fixture
def sent_sms(business, twilio):
    request = sms_request(business)
    dispatch_and_send()
    return step(request, 0)


# --- Twilio status callbacks ----------------------------------------------------------------------


def test_status_callback_with_a_valid_signature_marks_delivered(client, settings, sent_sms):
    data = {"MessageSid": sent_sms.provider_message_id, "MessageStatus": "delivered"}
    response = twilio_post(client, settings, status_path(sent_sms), data)
    assert response.status_code == 200
    sent_sms.refresh_from_db()
    assert sent_sms.status == "delivered" and sent_sms.delivered_at is not None
    assert sent_sms.review_request.status == "delivered"


@pytest.mark.parametrize("signature", ["", "bm90IGEgc2lnbmF0dXJl"])
def test_status_callback_with_a_missing_or_bad_signature_is_refused(
    client, settings, sent_sms, signature
):
    data = {"MessageSid": sent_sms.provider_message_id, "MessageStatus": "undelivered"}
    response = twilio_post(client, settings, status_path(sent_sms), data, signature=signature)
    assert response.status_code == 403
    sent_sms.refresh_from_db()
    assert sent_sms.status == "sent"


def test_a_signature_for_other_fields_or_another_url_is_refused(client, settings, sent_sms):
    signed = {"MessageSid": sent_sms.provider_message_id, "MessageStatus": "delivered"}
    signature = RequestValidator(TWILIO_TOKEN).compute_signature(
        settings.SITE_URL + status_path(sent_sms), signed
    )
    tampered = {**signed, "MessageStatus": "undelivered"}
    response = twilio_post(client, settings, status_path(sent_sms), tampered, signature=signature)
    assert response.status_code == 403
    other_url = f"/webhooks/twilio/status/{sent_sms.pk}/?x=1"
    response = twilio_post(client, settings, other_url, signed, signature=signature)
    assert response.status_code == 403
    sent_sms.refresh_from_db()
    assert sent_sms.status == "sent"


def test_status_callbacks_are_idempotent_and_never_go_backwards(client, settings, sent_sms):
    sid = sent_sms.provider_message_id
    for status in ("delivered", "delivered", "sent", "queued", "undelivered"):
        response = twilio_post(
            client, settings, status_path(sent_sms), {"MessageSid": sid, "MessageStatus": status}
        )
        assert response.status_code == 200
    sent_sms.refresh_from_db()
    assert sent_sms.status == "delivered"


def test_undelivered_callback_fails_the_message_with_twilios_error(client, settings, sent_sms):
    data = {
        "MessageSid": sent_sms.provider_message_id,
        "MessageStatus": "undelivered",
        "ErrorCode": "30005",
    }
    twilio_post(client, settings, status_path(sent_sms), data)
    sent_sms.refresh_from_db()
    assert (sent_sms.status, sent_sms.last_error_code) == ("failed", "30005")


def test_callback_for_another_sid_or_an_unknown_message_answers_200_and_changes_nothing(
    client, settings, sent_sms
):
    other = {"MessageSid": "SM" + "f" * 32, "MessageStatus": "undelivered"}
    assert twilio_post(client, settings, status_path(sent_sms), other).status_code == 200
    sent_sms.refresh_from_db()
    assert sent_sms.status == "sent"
    unknown_path = "/webhooks/twilio/status/00000000-0000-4000-8000-000000000000/"
    data = {"MessageSid": "SM1", "MessageStatus": "delivered"}
    assert twilio_post(client, settings, unknown_path, data).status_code == 200


def test_status_callback_reconciles_an_unknown_message(client, settings, business, twilio):
    twilio.script("twilio", "hang")
    request = sms_request(business)
    dispatch_and_send()
    message = step(request, 0)
    assert message.status == "unknown"
    sid = twilio.twilio_messages()[0]["sid"]
    twilio_post(
        client, settings, status_path(message), {"MessageSid": sid, "MessageStatus": "sent"}
    )
    message.refresh_from_db()
    assert (message.status, message.provider_message_id) == ("sent", sid)
    assert step(request, 1).status == "pending"


def test_webhooks_only_accept_post(client, sent_sms):
    assert client.get(status_path(sent_sms)).status_code == 405
    assert client.get("/webhooks/twilio/inbound/").status_code == 405


# --- Twilio inbound SMS ---------------------------------------------------------------------------


def inbound(client, settings, body: str, from_number: str, sid: str = "SMin1", **kwargs):
    data = {"From": from_number, "To": "+15005550006", "Body": body, "MessageSid": sid}
    return twilio_post(client, settings, "/webhooks/twilio/inbound/", data, **kwargs)


def test_inbound_stop_in_other_words_opts_out_every_contact_with_that_number(
    client, settings, business, other_owner, twilio
):
    request = sms_request(business, phone="+14155552671")
    other = sms_request(other_owner, phone="+14155552671")
    response = inbound(client, settings, "Please stop texting me!", "+14155552671")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/xml")
    assert b"<Message>You&apos;re unsubscribed" in response.content or (
        b"<Message>You're unsubscribed" in response.content
    )
    for contact_id in (request.contact_id, other.contact_id):
        contact = Contact.objects.get(pk=contact_id)
        assert contact.sms_opted_out_at is not None
    events = OptOutEvent.objects.filter(action="opt_out")
    assert events.count() == 2
    event = events.first()
    assert (event.channel, event.source, event.raw_text) == (
        "sms",
        "sms_reply",
        "Please stop texting me!",
    )
    assert dispatch_and_send() == []  # their pending first messages were cancelled
    request.refresh_from_db()
    assert request.status == "opted_out"


def test_inbound_standard_keyword_gets_no_second_confirmation(client, settings, business):
    sms_request(business, phone="+14155552671")
    response = inbound(client, settings, "STOP", "+14155552671")
    assert response.status_code == 200
    assert b"<Message>" not in response.content  # Twilio already confirmed it
    settings.TWILIO_ANSWERS_STANDARD_KEYWORDS = False
    response = inbound(client, settings, "STOP", "+14155552671", sid="SMin2")
    assert b"<Message>" in response.content


def test_inbound_replay_records_nothing_new(client, settings, business):
    sms_request(business, phone="+14155552671")
    inbound(client, settings, "unsubscribe", "+14155552671", sid="SMsame")
    inbound(client, settings, "unsubscribe", "+14155552671", sid="SMsame")
    assert OptOutEvent.objects.count() == 1


def test_inbound_start_opts_back_in_only_after_an_sms_opt_out(client, settings, business):
    request = sms_request(business, phone="+14155552671")
    inbound(client, settings, "STOP", "+14155552671", sid="SMa")
    inbound(client, settings, "Start", "+14155552671", sid="SMb")
    contact = Contact.objects.get(pk=request.contact_id)
    assert contact.sms_opted_out_at is None
    assert list(OptOutEvent.objects.order_by("id").values_list("action", flat=True)) == [
        "opt_out",
        "opt_in",
    ]
    request.refresh_from_db()
    assert request.status == "opted_out"  # a request that ended stays ended
    Contact.objects.filter(pk=contact.pk).update(
        sms_opted_out_at=contact.created_at, sms_opt_out_source="staff"
    )
    inbound(client, settings, "START", "+14155552671", sid="SMc")
    assert Contact.objects.get(pk=contact.pk).sms_opted_out_at is not None


def test_inbound_help_is_answered_and_other_text_is_ignored(client, settings, business):
    settings.TWILIO_ANSWERS_STANDARD_KEYWORDS = False
    response = inbound(client, settings, "help", "+14155552671")
    assert settings.SMS_HELP_TEXT.encode().replace(b"&", b"&amp;") in response.content
    response = inbound(client, settings, "Thanks, it was great", "+14155552671", sid="SMx")
    assert b"<Message>" not in response.content
    assert OptOutEvent.objects.count() == 0


@pytest.mark.parametrize("signature", ["", "bm90IGEgc2lnbmF0dXJl"])
def test_inbound_without_a_valid_signature_is_refused(client, settings, business, signature):
    request = sms_request(business, phone="+14155552671")
    response = inbound(client, settings, "STOP", "+14155552671", signature=signature)
    assert response.status_code == 403
    assert Contact.objects.get(pk=request.contact_id).sms_opted_out_at is None


def test_twilio_webhooks_are_refused_when_no_auth_token_is_configured(client, settings):
    settings.TWILIO_AUTH_TOKEN = ""
    data = {"From": "+14155552671", "Body": "STOP"}
    signature = RequestValidator("").compute_signature(
        settings.SITE_URL + "/webhooks/twilio/inbound/", data
    )
    response = twilio_post(client, settings, "/webhooks/twilio/inbound/", data, signature=signature)
    assert response.status_code == 403


# --- anymail tracking (Postmark) ------------------------------------------------------------------

WEBHOOK_SECRET = "hook:s3cret"


@pytest.fixture
def tracking(settings, postmark):
    settings.ANYMAIL = {**settings.ANYMAIL, "WEBHOOK_SECRET": WEBHOOK_SECRET}

    def post(payload: dict, *, auth: str | None = WEBHOOK_SECRET):
        headers = {}
        if auth:
            headers["Authorization"] = "Basic " + base64.b64encode(auth.encode()).decode()
        return Client().post(
            "/webhooks/anymail/postmark/tracking/",
            json.dumps(payload),
            content_type="application/json",
            headers=headers,
        )

    return post


@pytest.fixture
def sent_email(business, postmark):
    request = email_request(business)
    dispatch_and_send()
    return step(request, 0)


def test_esp_delivery_event_marks_the_email_delivered(tracking, sent_email):
    payload = {
        "RecordType": "Delivery",
        "MessageID": sent_email.provider_message_id,
        "Recipient": sent_email.to_address,
        "DeliveredAt": "2026-06-10T16:00:00Z",
        "Metadata": {"message_id": str(sent_email.pk)},
    }
    assert tracking(payload).status_code == 200
    sent_email.refresh_from_db()
    assert sent_email.status == "delivered"


def test_esp_hard_bounce_fails_the_email_and_suppresses_the_address(tracking, sent_email):
    payload = {
        "RecordType": "Bounce",
        "Type": "HardBounce",
        "ID": 4242,
        "MessageID": sent_email.provider_message_id,
        "Email": sent_email.to_address,
        "BouncedAt": "2026-06-10T16:00:00Z",
        "Description": "The server was unable to deliver your message",
    }
    assert tracking(payload).status_code == 200
    assert tracking(payload).status_code == 200  # a replay
    sent_email.refresh_from_db()
    assert (sent_email.status, sent_email.last_error_code) == ("failed", "bounced")
    contact = Contact.objects.get(pk=sent_email.review_request.contact_id)
    assert contact.email_opt_out_source == "email_bounce"
    assert OptOutEvent.objects.filter(channel="email").count() == 1
    request = sent_email.review_request
    request.refresh_from_db()
    assert request.status == "failed"
    assert list(request.messages.values_list("status", flat=True)) == [
        "failed",
        "cancelled",
        "cancelled",
    ]


def test_esp_soft_bounce_changes_nothing(tracking, sent_email):
    payload = {
        "RecordType": "Bounce",
        "Type": "SoftBounce",
        "ID": 4243,
        "MessageID": sent_email.provider_message_id,
        "Email": sent_email.to_address,
    }
    assert tracking(payload).status_code == 200
    sent_email.refresh_from_db()
    assert sent_email.status == "sent"


def test_esp_spam_complaint_opts_the_contact_out_of_email(tracking, sent_email):
    payload = {
        "RecordType": "SpamComplaint",
        "Type": "SpamComplaint",
        "ID": 99,
        "MessageID": sent_email.provider_message_id,
        "Email": sent_email.to_address,
    }
    assert tracking(payload).status_code == 200
    contact = Contact.objects.get(pk=sent_email.review_request.contact_id)
    assert contact.email_opt_out_source == "email_complaint"
    request = sent_email.review_request
    request.refresh_from_db()
    assert request.status == "opted_out"


def test_esp_event_for_an_unknown_message_answers_200(tracking, db):
    payload = {"RecordType": "Delivery", "MessageID": "nope", "Recipient": "x@example.com"}
    assert tracking(payload).status_code == 200


def test_esp_webhook_needs_anymails_basic_auth(tracking, sent_email, settings):
    payload = {"RecordType": "Delivery", "MessageID": sent_email.provider_message_id}
    assert tracking(payload, auth="hook:wrong").status_code == 400  # anymail's answer
    assert tracking(payload, auth=None).status_code == 400
    sent_email.refresh_from_db()
    assert sent_email.status == "sent"
    settings.ANYMAIL = {}
    assert tracking(payload).status_code == 403  # never open when no secret is configured
