"""The provider signals' receivers (reviews.receivers): e-mail tracking events and mailto
unsubscribes from the ESP's webhooks."""

from __future__ import annotations

import base64
import json

import pytest
from anymail.inbound import AnymailInboundMessage
from anymail.signals import AnymailInboundEvent, inbound
from django.test import Client

from reviews.models import Contact, OptOutEvent
from tests.support.delivery import (
    dispatch_and_send,
    email_request,
    step,
)

pytestmark = pytest.mark.django_db


def test_a_mailto_unsubscribe_through_the_esps_inbound_webhook_opts_out(business):
    request = email_request(business)
    message = AnymailInboundMessage.construct(
        from_email=request.contact.email,
        to="unsubscribe@inbound.example.com",
        subject=f"unsubscribe {request.token}",
        text="",
    )
    inbound.send(
        sender=None,
        event=AnymailInboundEvent(event_type="inbound", message=message, event_id="in-1"),
        esp_name="Postmark",
    )
    contact = Contact.objects.get(pk=request.contact_id)
    assert contact.email_opt_out_source == "email_unsubscribe"
    other = AnymailInboundMessage.construct(subject="Hello there", text="hi")
    inbound.send(
        sender=None,
        event=AnymailInboundEvent(event_type="inbound", message=other),
        esp_name="Postmark",
    )
    assert OptOutEvent.objects.count() == 1


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
