"""The Webhooks page: the owner's subscriptions (active or disabled) and recent deliveries."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.utils import timezone

from events.models import EventType, WebhookDelivery, WebhookSubscription
from events.services import event_record, webhook_subscription_create
from tests.support.portal_golden import assert_page_unchanged

pytestmark = pytest.mark.django_db

URL = "/portal/webhooks/"
TARGET = "https://93.184.216.34/hooks/catch"  # never called here


def test_subscriptions_and_deliveries_of_the_owner_only(browser, owner, other_owner):
    active = webhook_subscription_create(
        owner=owner, event=EventType.REVIEW_REQUEST_CLICKED, target_url=TARGET + "/a"
    )
    disabled = webhook_subscription_create(
        owner=owner, event=EventType.CONTACT_OPTED_OUT, target_url=TARGET + "/b"
    )
    WebhookSubscription.objects.filter(pk=disabled.pk).update(
        disabled_at=timezone.now(), disabled_reason="No successful delivery for 3 days"
    )
    webhook_subscription_create(
        owner=other_owner, event=EventType.REVIEW_REQUEST_CLICKED, target_url=TARGET + "/theirs"
    )
    with transaction.atomic():
        event_record(owner_id=owner.pk, type=EventType.REVIEW_REQUEST_CLICKED, data={})
    WebhookDelivery.objects.update(attempts=2, last_error="HTTP 500: oops", last_status_code=500)

    response = browser.get(URL)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'aria-current="page">Webhooks</a>' in html
    assert "Review link clicked" in html and TARGET + "/a" in html
    assert '<span class="badge active">Active</span>' in html
    assert '<span class="badge disabled">Disabled</span>' in html
    assert "No successful delivery for 3 days" in html
    assert "HTTP 500: oops" in html and "review_request.clicked" in html
    assert "/theirs" not in html
    assert active.secret not in html


def test_an_owner_without_hooks_is_told_how_they_come(browser):
    html = browser.get(URL).content.decode()
    assert "No app has subscribed to events yet." in html and "Nothing sent yet." in html


def test_the_page_needs_a_login(client):
    response = client.get(URL)
    assert response.status_code == 302 and "/login" in response["Location"]


def test_remove_asks_first_then_deletes_the_subscription(browser, owner):
    hook = webhook_subscription_create(
        owner=owner, event=EventType.FEEDBACK_RECEIVED, target_url=TARGET
    )
    url = f"/portal/webhooks/{hook.pk}/remove/"
    assert f'href="{url}"' in browser.get(URL).content.decode()
    page = browser.get(url)
    assert page.status_code == 200 and b"Remove this webhook?" in page.content
    assert WebhookSubscription.objects.filter(pk=hook.pk).exists()
    response = browser.post(url, follow=True)
    assert response.redirect_chain[-1][0] == URL
    assert "nothing more is sent to" in response.content.decode()
    assert not WebhookSubscription.objects.exists()


def test_another_owners_subscription_cannot_be_removed(other_browser, owner):
    hook = webhook_subscription_create(
        owner=owner, event=EventType.FEEDBACK_RECEIVED, target_url=TARGET
    )
    url = f"/portal/webhooks/{hook.pk}/remove/"
    assert other_browser.get(url).status_code == 404
    assert other_browser.post(url).status_code == 404
    assert WebhookSubscription.objects.filter(pk=hook.pk).exists()


def test_a_business_with_one_location_sees_the_page_it_saw_before(golden):
    client, _, _ = golden
    assert_page_unchanged(client, "webhooks", "/portal/webhooks/")


def test_the_webhooks_pages_are_the_owners_only(owner, manager, viewer):
    hook = webhook_subscription_create(
        owner=owner, event=EventType.REVIEW_REQUEST_CLICKED, target_url=TARGET
    )
    for client in (manager, viewer):
        assert client.get(URL).status_code == 403
        assert client.get(f"/portal/webhooks/{hook.pk}/remove/").status_code == 403
        assert client.post(f"/portal/webhooks/{hook.pk}/remove/").status_code == 403
        assert 'href="/portal/webhooks/"' not in client.get("/").content.decode()
    assert WebhookSubscription.objects.filter(pk=hook.pk).exists()
