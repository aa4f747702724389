"""Staff admin: subscriptions without their secrets, deliveries, and "redeliver"; every list
filters by account, subscriptions by location."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.utils import timezone

import events.admin
from events.models import EventType, WebhookDelivery, WebhookSubscription
from events.services import event_record, webhooks_deliver_due
from tests.factories import LocationFactory, first_location
from tests.support.webhook_receiver import subscribe

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("allow_loopback")]


def test_subscriptions_and_deliveries_are_listed_without_secrets(staff, owner, receiver):
    subscription = subscribe(owner, EventType.FEEDBACK_RECEIVED, receiver.url)
    with transaction.atomic():
        event_record(owner_id=owner.pk, type=EventType.FEEDBACK_RECEIVED, data={"id": "x"})
    receiver.answer(503)
    webhooks_deliver_due()
    page = staff.get("/admin/events/webhooksubscription/").content.decode()
    assert receiver.url in page and subscription.secret not in page
    detail = staff.get(f"/admin/events/webhooksubscription/{subscription.pk}/change/")
    assert detail.status_code == 200 and subscription.secret not in detail.content.decode()
    deliveries = staff.get("/admin/events/webhookdelivery/").content.decode()
    assert "feedback.received" in deliveries and "HTTP 503" in deliveries


def test_redeliver_sends_the_selected_deliveries_again(staff, owner, receiver):
    subscribe(owner, EventType.FEEDBACK_RECEIVED, receiver.url)
    with transaction.atomic():
        event = event_record(owner_id=owner.pk, type=EventType.FEEDBACK_RECEIVED, data={"id": "x"})
    webhooks_deliver_due()
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "delivered"
    response = staff.post(
        "/admin/events/webhookdelivery/",
        {"action": "redeliver", "_selected_action": [delivery.pk]},
        follow=True,
    )
    assert "1 deliveries queued again." in response.content.decode()
    assert webhooks_deliver_due().delivered == 1
    assert [c.json["id"] for c in receiver.received()] == [str(event.id)] * 2


def test_redeliver_skips_a_disabled_subscription(staff, owner, receiver):
    subscription = subscribe(owner, EventType.FEEDBACK_RECEIVED, receiver.url)
    with transaction.atomic():
        event_record(owner_id=owner.pk, type=EventType.FEEDBACK_RECEIVED, data={"id": "x"})
    WebhookSubscription.objects.filter(pk=subscription.pk).update(disabled_at=timezone.now())
    WebhookDelivery.objects.update(status="failed", next_attempt_at=None)
    response = staff.post(
        "/admin/events/webhookdelivery/",
        {
            "action": "redeliver",
            "_selected_action": list(WebhookDelivery.objects.values_list("pk", flat=True)),
        },
        follow=True,
    )
    assert "1 skipped: their subscription is disabled." in response.content.decode()
    assert WebhookDelivery.objects.get().status == "failed"


def test_staff_delete_subscriptions_through_the_unsubscribe_service(
    staff, owner, receiver, monkeypatch
):
    """The admin's delete page and its "delete selected" action both unsubscribe as the API
    and the portal do; the pending deliveries go with the subscription."""
    deleted = []
    delete = events.admin.webhook_subscription_delete

    def spy(**kwargs):
        deleted.append(kwargs["subscription_id"])
        return delete(**kwargs)

    monkeypatch.setattr(events.admin, "webhook_subscription_delete", spy)
    one, two, three = (
        subscribe(owner, EventType.FEEDBACK_RECEIVED, f"{receiver.url}{n}") for n in range(3)
    )
    with transaction.atomic():
        event_record(owner_id=owner.pk, type=EventType.FEEDBACK_RECEIVED, data={"id": "x"})
    assert WebhookDelivery.objects.count() == 3

    page = staff.post(f"/admin/events/webhooksubscription/{one.pk}/delete/", {"post": "yes"})
    assert page.status_code == 302
    staff.post(
        "/admin/events/webhooksubscription/",
        {"action": "delete_selected", "_selected_action": [two.pk, three.pk], "post": "yes"},
    )
    assert sorted(deleted) == sorted([one.pk, two.pk, three.pk])
    assert not WebhookSubscription.objects.exists()
    assert not WebhookDelivery.objects.exists()


def hook(owner, url, location=None) -> WebhookSubscription:
    return WebhookSubscription.objects.create(
        owner=owner,
        event=EventType.FEEDBACK_RECEIVED,
        target_url=url,
        secret="whsec_dGVzdA==",
        location=location,
    )


def test_the_lists_filter_by_account_and_subscriptions_by_location(staff, owner, other_owner):
    north = first_location(owner, name="North")
    south = LocationFactory(account=owner, name="South")
    everywhere = hook(owner, "https://hooks.example.com/a")
    at_south = hook(owner, "https://hooks.example.com/b", location=south)
    theirs = hook(other_owner, "https://hooks.example.com/c")
    with transaction.atomic():
        mine = event_record(
            owner_id=owner.pk,
            type=EventType.FEEDBACK_RECEIVED,
            data={"id": "x"},
            location_id=south.pk,
        )
        event_record(owner_id=other_owner.pk, type=EventType.FEEDBACK_RECEIVED, data={"id": "y"})

    def listed(model, **params):
        page = staff.get(f"/admin/events/{model}/", params)
        assert page.status_code == 200
        return {row.pk for row in page.context["cl"].result_list}

    by = {"owner": owner.email}
    assert listed("webhooksubscription", **by) == {everywhere.pk, at_south.pk}
    assert listed("webhooksubscription", **by, location=south.pk) == {at_south.pk}
    assert listed("webhooksubscription", **by, location=north.pk) == set()
    assert listed("webhooksubscription", owner=other_owner.email) == {theirs.pk}
    assert listed("event", **by) == {mine.pk}
    deliveries = WebhookDelivery.objects.filter(event=mine).values_list("pk", flat=True)
    assert listed("webhookdelivery", **by) == set(deliveries) and deliveries
