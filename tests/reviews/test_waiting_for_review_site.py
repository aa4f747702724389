"""No review request leaves while the business lists no review site: it waits, says why, and
goes out through the dispatcher's normal path once a site is added."""

from __future__ import annotations

from datetime import UTC, datetime, time

import pytest
from rest_framework.test import APIClient

from reviews.models import BusinessSettings, Message, ReviewRequest, ReviewSite
from reviews.services import (
    SendNowRefused,
    contact_add,
    message_send,
    messages_dispatch_due,
    review_request_send_now,
    review_site_add,
)
from tests.factories import UserFactory
from tests.support.contacts import contact_input
from tests.support.delivery import dispatch_and_send, email_request, sms_request, step
from tests.support.oauth import issue_tokens

pytestmark = pytest.mark.django_db

NOON_IN_NEW_YORK = datetime(2026, 6, 10, 16, 0, tzinfo=UTC)
# 02:00 in New York: outside the default SMS window (08:00-21:00 on the recipient's clock).
NIGHT_IN_NEW_YORK = datetime(2026, 6, 11, 6, 0, tzinfo=UTC)


@pytest.fixture
def siteless(db):
    """A business created without ``--review-url``: no review site yet."""
    owner = UserFactory(business_name="Acme Plumbing", time_zone="America/New_York")
    BusinessSettings.objects.create(
        owner=owner, send_window_applies_to=BusinessSettings.WindowAppliesTo.NONE
    )
    return owner


def reload(obj):
    obj.refresh_from_db()
    return obj


def test_the_api_answers_scheduled_and_says_the_request_waits_for_a_site(
    siteless, time_machine, mailoutbox
):
    time_machine.move_to(NOON_IN_NEW_YORK, tick=False)
    client = APIClient()
    access, _ = issue_tokens(siteless, scope="read write")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
    response = client.post(
        "/api/zapier/send-review-request",
        {"first_name": "Jane", "email": "jane@example.com"},
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "scheduled"
    assert body["scheduled_for"] == "2026-06-10T16:00:00Z"
    assert "Waiting for a review site" in body["message"]

    request = ReviewRequest.objects.get(pk=body["id"])
    first = step(request, 0)
    assert (first.status, first.due_at) == ("planned", None)
    assert first.waiting_for_review_site
    assert messages_dispatch_due().claimed == []
    assert mailoutbox == []


def test_adding_a_site_sends_the_waiting_requests(siteless, mailoutbox):
    request = email_request(siteless)
    assert dispatch_and_send() == []

    review_site_add(owner=siteless, url="https://g.page/r/acme/review")

    first = step(request, 0)
    assert first.status == "pending" and not first.waiting_for_review_site
    assert (first.last_error, first.last_error_code) == ("", "")
    assert dispatch_and_send() == ["sent"]
    assert reload(request).status == "sent"
    (email,) = mailoutbox
    assert request.public_url() in email.body


def test_a_released_sms_still_waits_for_the_sending_window(siteless, time_machine):
    BusinessSettings.objects.filter(owner=siteless).update(
        send_window_applies_to=BusinessSettings.WindowAppliesTo.SMS,
        send_window_start=time(8),
        send_window_end=time(21),
    )
    BusinessSettings.invalidate_cached(siteless.pk)
    time_machine.move_to(NOON_IN_NEW_YORK, tick=False)
    request = sms_request(siteless, phone="+12125550123")  # New York

    time_machine.move_to(NIGHT_IN_NEW_YORK, tick=False)
    review_site_add(owner=siteless, url="https://g.page/r/acme/review")

    first = step(request, 0)
    opens = datetime(2026, 6, 11, 12, 0, tzinfo=UTC)  # 08:00 in New York
    assert (first.status, first.due_at) == ("pending", opens)
    assert reload(request).scheduled_for == opens
    assert messages_dispatch_due().claimed == []


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


def test_a_second_add_of_a_waiting_contact_says_it_still_waits(siteless):
    email_request(siteless, email="jane@example.com")
    again = contact_add(owner=siteless, data=contact_input(siteless, {"email": "jane@example.com"}))
    assert again.outcome == "already_active"
    assert Message.WAITING_FOR_REVIEW_SITE_TEXT in again.message


def test_the_portal_shows_the_banner_and_the_waiting_request(siteless, client):
    request = email_request(siteless)
    client.force_login(siteless)
    page = client.get("/").content.decode()
    assert "your review requests are waiting" in page
    assert 'href="/portal/settings/sites/"' in page
    assert "Waiting for a review site" in page

    detail = client.get(f"/portal/requests/{request.pk}/").content.decode()
    assert "your review requests are waiting" in detail
    assert Message.WAITING_FOR_REVIEW_SITE_TEXT in detail

    review_site_add(owner=siteless, url="https://g.page/r/acme/review")
    assert "your review requests are waiting" not in client.get("/").content.decode()


def test_the_admin_lists_it_as_waiting_and_adding_a_site_there_releases_it(siteless, client):
    request = email_request(siteless)
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    listing = client.get("/admin/reviews/reviewrequest/").content.decode()
    assert "Scheduled: waiting for a review site" in listing
    page = client.get(f"/admin/reviews/reviewrequest/{request.pk}/change/").content.decode()
    assert "waiting for a review site" in page

    response = client.post(
        "/admin/reviews/reviewsite/add/",
        {
            "owner": siteless.pk,
            "kind": "google",
            "label": "Google",
            "url": "https://g.page/r/acme/review",
            "position": 0,
        },
    )
    assert response.status_code == 302, response.content
    assert step(request, 0).status == "pending"


def test_send_now_says_the_request_waits_for_a_review_site(siteless):
    request = email_request(siteless)
    with pytest.raises(SendNowRefused, match="Waiting for a review site"):
        review_request_send_now(review_request=request)
