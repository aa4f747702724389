"""One request's page: contact, messages, the timeline, and cancelling it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from reviews.models import Click, Message, ReviewRequest, ReviewSite
from tests.support.portal_data import add_request, click, fail, leave_feedback, opt_out, send_first

pytestmark = pytest.mark.django_db


def titles(response) -> list[str]:
    return [event.title for event in response.context["timeline"]]


def test_the_timeline_tells_what_happened_in_order(browser, owner):
    start = timezone.now() - timedelta(days=1)
    ReviewSite.objects.create(owner=owner, url="https://g.page/r/maria/review", label="Google")
    request = add_request(
        owner,
        first_name="Maria",
        email="maria@example.com",
        mobile_phone_number="+14155550101",
        created_at=start,
    )
    send_first(request, at=start + timedelta(seconds=5), delivered=True)
    scanner = Click.objects.create(
        review_request=request,
        url="https://g.page/r/x/review",
        method="GET",
        counted=False,
        ignored_reason="link_scanner",
    )
    Click.objects.filter(pk=scanner.pk).update(created_at=start + timedelta(seconds=30))
    click(request, at=start + timedelta(hours=2))
    leave_feedback(request, at=start + timedelta(hours=3), text="Great job on the boiler.")
    response = browser.get(f"/portal/requests/{request.pk}/")
    assert titles(response) == [
        "Review request created",
        "First message (SMS) sent",
        "First message (SMS) delivered",
        "Link to https://g.page/r/x/review fetched by a machine (not counted)",
        "Clicked through to Google",  # the cause, then its effects at the same instant
        "Follow-up 1 (e-mail) cancelled before it was sent",
        "Follow-up 2 (e-mail) cancelled before it was sent",
        "Request ended: clicked",
        "Private feedback",
    ]
    html = response.content.decode()
    assert "Great job on the boiler." in html
    assert "To +14155550101" in html
    assert "link scanner" in html


def test_failures_show_the_providers_reason_and_opt_outs_their_source(browser, owner):
    now = timezone.now()
    failed = add_request(owner, first_name="Fatima", mobile_phone_number="+14155550106")
    fail(failed, at=now, code="21614", error="Not a mobile number")
    html = browser.get(f"/portal/requests/{failed.pk}/").content.decode()
    assert "21614 Not a mobile number" in html
    assert ">Failed</span>" in html

    stopped = add_request(owner, first_name="Aiko", mobile_phone_number="+14155550103")
    send_first(stopped, at=now)
    opt_out(stopped, at=now + timedelta(minutes=5))
    response = browser.get(f"/portal/requests/{stopped.pk}/")
    assert "Opted out of SMS" in titles(response)
    assert "Replied STOP (or similar) to an SMS" in response.content.decode()


def test_planned_follow_ups_say_when_they_will_go(browser, owner):
    request = add_request(owner, first_name="Noah", email="noah@example.com")
    html = browser.get(f"/portal/requests/{request.pk}/").content.decode()
    assert "3 days after the first message is sent" in html
    assert "7 days after the first message is sent" in html
    assert "Cancel this request" in html


def test_cancel_asks_first_then_stops_every_unsent_message(browser, owner):
    request = add_request(owner, first_name="Emma", email="emma@example.com")
    url = f"/portal/requests/{request.pk}/cancel/"
    confirm = browser.get(url)
    assert b"Cancel the review request to Emma?" in confirm.content
    request.refresh_from_db()
    assert request.status == ReviewRequest.Status.SCHEDULED  # asking changes nothing

    done = browser.post(url, follow=True)
    assert done.redirect_chain == [(f"/portal/requests/{request.pk}/", 302)]
    assert b"will get no more messages" in done.content
    request.refresh_from_db()
    assert request.status == ReviewRequest.Status.CANCELLED
    assert request.ended_detail == "cancelled by the business in the portal"
    statuses = set(request.messages.values_list("status", flat=True))
    assert statuses == {Message.Status.CANCELLED}


def test_cancelling_an_ended_request_changes_nothing(browser, owner):
    request = add_request(owner, first_name="Olivia", email="olivia@example.com")
    send_first(request, at=timezone.now())
    click(request, at=timezone.now())
    response = browser.post(f"/portal/requests/{request.pk}/cancel/", follow=True)
    assert b"had already ended" in response.content
    request.refresh_from_db()
    assert request.status == ReviewRequest.Status.CLICKED
    assert b"Cancel this request" not in response.content


def test_an_unknown_request_id_is_not_found(browser):
    assert browser.get("/portal/requests/00000000-0000-0000-0000-000000000000/").status_code == 404
    assert browser.get("/portal/requests/not-a-uuid/").status_code == 404
