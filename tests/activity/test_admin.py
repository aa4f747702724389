"""The staff dashboard's page in the admin (activity/admin.py), through Django's test client."""

from __future__ import annotations

import pytest
from django.utils import timezone

from reviews.models import BusinessSettings, Channel, Contact, Message, OptOutEvent, ReviewRequest
from tests.factories import UserFactory
from tests.reviews.admin import conftest as back_office
from tests.support.portal_data import add_request

pytestmark = pytest.mark.django_db

# The back office tests' business (one review site), which these tests were written with beside
# the other admin pages, in place of this folder's.
business = back_office.business


def test_dashboard_counts_per_day_rate_failures_and_opt_outs(staff, business):
    other = UserFactory(business_name="Other Co")
    BusinessSettings.objects.create(owner=other)
    now = timezone.now()
    sent = add_request(business, email="a@example.com", delay_hours=0)
    ReviewRequest.objects.filter(pk=sent.pk).update(
        status="clicked", sent_at=now, clicked_at=now, ended_at=now
    )
    failed = add_request(business, email="b@example.com", delay_hours=0)
    ReviewRequest.objects.filter(pk=failed.pk).update(sent_at=now)
    Message.objects.filter(review_request=failed, step=0).update(
        status="failed", failed_at=now, last_error_code="bounced", last_error="Hard bounce"
    )
    OptOutEvent.objects.create(
        owner=business,
        channel=Channel.SMS,
        action=OptOutEvent.Action.OPT_OUT,
        source=Contact.OptOutSource.SMS_REPLY,
        address="+14155552671",
    )
    add_request(other, email="c@example.com", delay_hours=0)

    page = staff.get("/admin/reviews/reviewrequest/dashboard/", {"owner": str(business.pk)})
    html = page.content.decode()
    data = page.context["data"]
    # Delivered: the click proves arrival (the portal's definition too).
    assert [s.total for s in data.series] == [2, 2, 1, 1, 0]
    assert data.click_through_rate == 50.0
    assert "50.0 %" in html
    assert "<code>bounced</code>" in html and "Hard bounce" in html
    assert "Replied STOP" in html
    assert html.count("<polyline") == 5
    everyone = staff.get("/admin/reviews/reviewrequest/dashboard/").context["data"]
    assert everyone.series[0].total == 3
    assert len(everyone.series[0].counts) == 30


def test_dashboard_needs_staff(client, business):
    response = client.get("/admin/reviews/reviewrequest/dashboard/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
