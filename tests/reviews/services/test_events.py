"""What the reviews app reports to webhooks (reviews.services.events): each outcome is written as
an event in the transaction of the change that causes it, with one delivery row per subscription of
its owner to its type; a change rolled back reports nothing."""

from __future__ import annotations

from datetime import UTC, timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from core.times import iso_utc
from events.models import Event, EventType, WebhookDelivery, WebhookSubscription
from reviews.models import BusinessSettings, Contact, Message, ReviewRequest
from reviews.services import (
    click_record,
    contact_email_unsubscribe,
    contacts_opt_out,
    feedback_leave,
    message_provider_status_apply,
    review_request_cancel,
    sms_reply_record,
)
from tests.factories import ReviewSiteFactory, UserFactory
from tests.support.delivery import dispatch_and_send, email_request, sms_request, step
from tests.support.webhook_receiver import subscribe

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("allow_loopback")]

HUMAN = "Mozilla/5.0 (Linux; Android 14) AppleWebKit/537.36 Chrome/120.0 Mobile Safari/537.36"
URL = "http://127.0.0.1:9/hooks"  # never called: these tests only record


@pytest.fixture
def business(db):
    owner = UserFactory(business_name="Acme Plumbing", time_zone="America/New_York")
    BusinessSettings.objects.create(
        owner=owner, send_window_applies_to=BusinessSettings.WindowAppliesTo.NONE
    )
    ReviewSiteFactory(owner=owner, label="Google", url="https://g.page/r/acme/review")
    return owner


@pytest.fixture
def subscribed(business):
    """The business subscribed to every event type, once each."""
    return {t: subscribe(business, t, URL) for t in EventType.values}


def events(type: str) -> list[Event]:
    return list(Event.objects.filter(type=type).order_by("occurred_at"))


def the_event(type: str) -> Event:
    (event,) = events(type)
    return event


def sent_request(owner) -> ReviewRequest:
    request = email_request(owner)
    dispatch_and_send()
    request.refresh_from_db()
    # Sent a while ago: a click now is not "within a second of sending".
    Message.objects.filter(review_request=request, step=0).update(
        sent_at=timezone.now() - timedelta(minutes=10),
        sending_at=timezone.now() - timedelta(minutes=10),
    )
    return request


def test_sent_carries_the_contract_object_and_channel(business, subscribed):
    request = sent_request(business)
    event = the_event(EventType.REVIEW_REQUEST_SENT)
    assert event.owner_id == business.pk
    contact = request.contact
    sent_at = request.sent_at.astimezone(UTC)
    assert event.data == {
        "id": str(request.pk),
        "contact_id": str(contact.pk),
        "contact_name": "Jane",
        "contact_email": contact.email,
        "contact_phone": None,
        "scheduled_for": iso_utc(request.scheduled_for),
        "status": "sent",
        "message": (
            f"Review request sent to Jane (first message sent {sent_at:%Y-%m-%d %H:%M} UTC); "
            "follow-ups stop as soon as they click or opt out."
        ),
        "location_id": str(request.location_id),
        "location_name": request.location.name,
        "channel": "email",
    }
    (delivery,) = WebhookDelivery.objects.filter(event=event)
    assert delivery.subscription == subscribed[EventType.REVIEW_REQUEST_SENT]
    assert delivery.status == "pending" and delivery.next_attempt_at <= timezone.now()


def test_delivered(business, subscribed):
    request = sent_request(business)
    message_provider_status_apply(message_id=str(step(request, 0).pk), outcome="delivered")
    event = the_event(EventType.REVIEW_REQUEST_DELIVERED)
    assert event.data["id"] == str(request.pk) and event.data["status"] == "delivered"


def test_clicked_once_with_the_click(business, subscribed):
    request = sent_request(business)
    site = business.review_sites.get()
    for _ in range(2):
        click_record(review_request=request, site=site, method="GET", user_agent=HUMAN, ip="")
    event = the_event(EventType.REVIEW_REQUEST_CLICKED)  # the first human click only
    assert event.data["status"] == "clicked"
    assert event.data["click"]["site"] == "Google"
    assert event.data["click"]["url"] == "https://g.page/r/acme/review"


def test_a_bot_fetch_is_no_click_event(business, subscribed):
    request = sent_request(business)
    site = business.review_sites.get()
    click_record(review_request=request, site=site, method="HEAD", user_agent=HUMAN, ip="")
    assert events(EventType.REVIEW_REQUEST_CLICKED) == []


def test_completed_when_the_last_step_was_sent(business, subscribed):
    BusinessSettings.objects.filter(owner=business).update(follow_up_offsets_hours=[])
    request = sent_request(business)
    assert the_event(EventType.REVIEW_REQUEST_SENT).data["id"] == str(request.pk)
    completed = the_event(EventType.REVIEW_REQUEST_COMPLETED)
    assert completed.data["id"] == str(request.pk) and completed.data["status"] == "completed"


def test_failed_with_the_reason(business, subscribed):
    request = sent_request(business)
    message_provider_status_apply(
        message_id=str(step(request, 0).pk),
        outcome="failed",
        error_code="bounce",
        detail="mailbox does not exist",
    )
    event = the_event(EventType.REVIEW_REQUEST_FAILED)
    assert event.data["status"] == "failed"
    assert "mailbox does not exist" in event.data["reason"]


def test_cancelled(business, subscribed):
    request = email_request(business)
    review_request_cancel(review_request=request)
    review_request_cancel(review_request=request)  # idempotent: reported once
    assert the_event(EventType.REVIEW_REQUEST_CANCELLED).data["status"] == "cancelled"


@pytest.mark.parametrize(
    ("how", "channel"),
    [("email_unsubscribe", "email"), ("sms_reply", "sms"), ("staff", "email")],
)
def test_opted_out_by_link_sms_stop_and_staff(business, subscribed, how, channel):
    if channel == "sms":
        request = sms_request(business)
        sms_reply_record(from_number=request.contact.phone, body="STOP", message_sid="SM1")
        sms_reply_record(from_number=request.contact.phone, body="STOP", message_sid="SM1")
    elif how == "email_unsubscribe":
        request = email_request(business)
        contact_email_unsubscribe(token=request.token)
    else:
        request = email_request(business)
        contacts_opt_out(contacts=[request.contact], channel="email", source="staff")
    event = the_event(EventType.CONTACT_OPTED_OUT)  # once, however often it is repeated
    assert event.data["contact_id"] == str(request.contact_id)
    assert event.data["id"] == str(request.pk) and event.data["status"] == "opted_out"
    assert (event.data["channel"], event.data["how"]) == (channel, how)


def test_opt_out_of_a_contact_without_requests(business, subscribed):
    contact = Contact.objects.create(
        owner=business, email="a@example.com", email_normalized="a@example.com"
    )
    contacts_opt_out(contacts=[contact], channel="email", source="owner")
    data = the_event(EventType.CONTACT_OPTED_OUT).data
    assert data["id"] is None and data["contact_id"] == str(contact.pk)


def test_feedback_received_with_the_text(business, subscribed):
    request = sent_request(business)
    feedback = feedback_leave(review_request=request, text="The tap still drips.", ip="")
    data = the_event(EventType.FEEDBACK_RECEIVED).data
    assert data["id"] == str(request.pk)
    assert data["feedback"]["text"] == "The tap still drips."
    assert data["feedback"]["id"] == str(feedback.pk)


def test_a_change_rolled_back_reports_nothing(business, subscribed):
    request = email_request(business)

    class Boom(Exception):
        pass

    with pytest.raises(Boom), transaction.atomic():
        review_request_cancel(review_request=request)
        assert Event.objects.filter(type=EventType.REVIEW_REQUEST_CANCELLED).exists()
        raise Boom
    request.refresh_from_db()
    assert request.status == "scheduled"
    assert not Event.objects.exists() and not WebhookDelivery.objects.exists()


def test_only_subscribed_active_types_of_the_owner_get_rows(business, other_owner):
    subscribe(other_owner, EventType.REVIEW_REQUEST_CANCELLED, URL)  # another business
    subscribe(business, EventType.REVIEW_REQUEST_SENT, URL)  # another type
    disabled = subscribe(business, EventType.REVIEW_REQUEST_CANCELLED, URL)
    WebhookSubscription.objects.filter(pk=disabled.pk).update(disabled_at=timezone.now())
    review_request_cancel(review_request=email_request(business))
    assert not Event.objects.exists() and not WebhookDelivery.objects.exists()


def test_one_event_goes_to_every_subscription_of_its_type(business):
    first = subscribe(business, EventType.REVIEW_REQUEST_CANCELLED, URL)
    second = subscribe(business, EventType.REVIEW_REQUEST_CANCELLED, URL + "/2")
    review_request_cancel(review_request=email_request(business))
    event = the_event(EventType.REVIEW_REQUEST_CANCELLED)
    assert {d.subscription_id for d in WebhookDelivery.objects.filter(event=event)} == {
        first.pk,
        second.pk,
    }
