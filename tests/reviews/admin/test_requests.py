"""The back office's requests and messages (reviews.admin.requests): the cancel, send-now and
resend actions through the services, a request's page with its timeline and every message, and the
list's filters."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from reviews.models import (
    Contact,
    Message,
    ReviewRequest,
)
from tests.factories import UserFactory
from tests.support.portal_data import add_request

pytestmark = pytest.mark.django_db


def action(client, model, name, ids, **extra):
    return client.post(
        f"/admin/reviews/{model}/",
        {"action": name, "_selected_action": [str(pk) for pk in ids], **extra},
        follow=True,
    )


def test_cancel_action_ends_requests_through_the_service(staff, business):
    active = add_request(business, email="a@example.com", delay_hours=5)
    ended = add_request(business, email="b@example.com", delay_hours=5)
    ended.status, ended.ended_at = ReviewRequest.Status.COMPLETED, timezone.now()
    ended.save()
    page = action(staff, "reviewrequest", "cancel_requests", [active.pk, ended.pk])
    html = page.content.decode()
    assert "Cancelled: 1." in html and "already ended (completed)" in html
    active.refresh_from_db()
    assert active.status == ReviewRequest.Status.CANCELLED
    assert "staff@example.com" in active.ended_detail
    assert set(active.messages.values_list("status", flat=True)) == {Message.Status.CANCELLED}


def test_send_now_action_reports_refusals(staff, business):
    later = add_request(business, email="a@example.com", delay_hours=24)
    opted = add_request(business, email="b@example.com", delay_hours=24)
    Contact.objects.filter(pk=opted.contact_id).update(email_opted_out_at=timezone.now())
    html = action(staff, "reviewrequest", "send_now", [later.pk, opted.pk]).content.decode()
    assert "Due now (a worker sends them shortly): 1." in html
    assert "opted out of e-mail" in html
    assert later.messages.get(step=0).due_at <= timezone.now()
    assert opted.messages.get(step=0).due_at > timezone.now() + timedelta(hours=23)


def test_resend_action_resends_a_failed_message_and_refuses_an_unknown_sms(staff, business):
    failed = add_request(business, email="a@example.com", delay_hours=0)
    Message.objects.filter(review_request=failed, step=0).update(
        status=Message.Status.FAILED, last_error="bounced"
    )
    unknown = add_request(business, mobile_phone_number="+14155552671", delay_hours=0)
    Message.objects.filter(review_request=unknown, step=0).update(status=Message.Status.UNKNOWN)
    html = action(staff, "reviewrequest", "resend_failed", [failed.pk, unknown.pk]).content
    html = html.decode()
    assert "Resent (pending again, due now): 1." in html
    assert "may already have been delivered" in html
    assert failed.messages.get(step=0).status == Message.Status.PENDING
    assert unknown.messages.get(step=0).status == Message.Status.UNKNOWN


def test_forced_resend_of_an_unknown_sms_asks_first(staff, business):
    unknown = add_request(business, mobile_phone_number="+14155552671", delay_hours=0)
    message = unknown.messages.get(step=0)
    Message.objects.filter(pk=message.pk).update(status=Message.Status.UNKNOWN)
    page = action(staff, "message", "resend_forced", [message.pk])
    assert "may already have delivered it" in page.content.decode()
    message.refresh_from_db()
    assert message.status == Message.Status.UNKNOWN
    action(staff, "message", "resend_forced", [message.pk], confirm="yes")
    message.refresh_from_db()
    assert message.status == Message.Status.PENDING


def test_staff_without_change_permission_get_no_actions(business):
    from django.contrib.auth.models import Permission

    viewer = UserFactory(is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_reviewrequest"))
    client = Client()
    client.force_login(viewer)
    request = add_request(business, email="a@example.com", delay_hours=5)
    page = client.get("/admin/reviews/reviewrequest/")
    assert page.status_code == 200 and b"cancel_requests" not in page.content
    client.post(
        "/admin/reviews/reviewrequest/",
        {"action": "cancel_requests", "_selected_action": [str(request.pk)]},
    )
    request.refresh_from_db()
    assert request.status == ReviewRequest.Status.SCHEDULED
    assert client.get("/admin/reviews/contact/import/").status_code == 403


def test_a_request_page_shows_its_timeline_and_every_message(staff, business):
    request = add_request(business, email="a@example.com", delay_hours=0)
    Message.objects.filter(review_request=request, step=0).update(
        status=Message.Status.FAILED,
        failed_at=timezone.now(),
        provider="postmark",
        provider_message_id="pm-123",
        last_error_code="bounced",
        last_error="Hard bounce",
    )
    html = staff.get(f"/admin/reviews/reviewrequest/{request.pk}/change/").content.decode()
    assert "Review request created" in html
    assert "First message (e-mail) failed" in html
    assert "pm-123" in html and "Hard bounce" in html


def test_requests_filter_by_status_and_owner(staff, business):
    other = UserFactory(business_name="Other Co")
    add_request(business, email="mine@example.com", first_name="Minnie", delay_hours=1)
    add_request(other, email="theirs@example.com", first_name="Theodore", delay_hours=1)
    # The business is typed (its e-mail, any case, or its id), completed from a list.
    for value in (business.email.upper(), str(business.pk)):
        page = staff.get("/admin/reviews/reviewrequest/", {"owner": value})
        html = page.content.decode()
        assert "Minnie" in html and "Theodore" not in html
    assert f'<option value="{business.email}">Acme Plumbing</option>' in html
    nobody = staff.get("/admin/reviews/reviewrequest/", {"owner": "nobody@example.com"})
    assert "Minnie" not in nobody.content.decode()
    page = staff.get("/admin/reviews/reviewrequest/", {"status__exact": "cancelled"})
    assert "Minnie" not in page.content.decode()


@pytest.mark.parametrize("model", ["click", "feedback", "optoutevent"])
def test_engagement_and_audit_rows_are_read_only_in_admin(staff, model):
    assert staff.get(f"/admin/reviews/{model}/").status_code == 200
    assert staff.get(f"/admin/reviews/{model}/add/").status_code == 403
