"""The staff dashboard's page in the admin (activity/admin.py), through Django's test client."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from reviews.models import BusinessSettings, Channel, Contact, Message, OptOutEvent, ReviewRequest
from tests.activity.conftest import add_at
from tests.factories import LocationFactory, ReviewSiteFactory, UserFactory
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


DASHBOARD = "/admin/reviews/reviewrequest/dashboard/"


def totals(page) -> list[int]:
    return [s.total for s in page.context["data"].series]


def test_dashboard_by_business_then_location(staff, business, places):
    pier = places["pier"]
    page = staff.get(DASHBOARD, {"owner": str(business.pk), "location": str(pier.pk)})
    html = page.content.decode()
    assert page.context["location"] == pier
    assert totals(page) == [3, 1, 1, 0, 1]  # scheduled, sent, delivered, clicked, failed
    assert '<select name="location" id="id_location">' in html
    assert '<option value="">All locations</option>' in html
    assert f'<option value="{pier.pk}" selected>Pier</option>' in html
    assert "Per day: Acme Plumbing" in html and ", Pier</h2>" in html
    assert "a contact opts out of every location" in html
    assert "<code>spam</code>" in html and "<code>bounced</code>" not in html

    whole = staff.get(DASHBOARD, {"owner": str(business.pk)})
    assert whole.context["location"] is None and totals(whole) == [7, 3, 2, 1, 2]
    assert '<select name="location"' in whole.content.decode()
    # Another business's location, or no business: the business's page, or everyone's.
    elsewhere = LocationFactory(account=UserFactory(business_name="Elsewhere"))
    for params in ({"location": str(elsewhere.pk)}, {"location": "not-an-id"}):
        ignored = staff.get(DASHBOARD, {"owner": str(business.pk), **params})
        assert ignored.context["location"] is None and totals(ignored) == totals(whole)
    everyone = staff.get(DASHBOARD, {"location": str(pier.pk)})
    assert everyone.context["location"] is None and everyone.context["owner"] is None
    assert '<select name="location"' not in everyone.content.decode()
    assert totals(everyone) == totals(staff.get(DASHBOARD))


def test_dashboard_queries_do_not_grow_with_locations_or_data(staff, business, places):
    pier = places["pier"]
    pages = [{}, {"owner": str(business.pk)}, {"owner": str(business.pk), "location": str(pier.pk)}]

    def queries() -> list[int]:
        counts = []
        for params in pages:
            with CaptureQueriesContext(connection) as captured:
                assert staff.get(DASHBOARD, params).status_code == 200
            counts.append(len(captured))
        return counts

    before = queries()
    for n in range(6):
        place = LocationFactory(account=business)
        ReviewSiteFactory(owner=business, location=place, url=f"https://g.page/r/more-{n}/review")
        add_at(business, place, created_at=timezone.now(), email=f"more{n}@example.com")
        add_at(business, pier, created_at=timezone.now(), email=f"pier{n}@example.com")
    assert queries() == before
    # The location filter: its locations for the form, the default location for the numbers.
    assert before[2] == before[1] + 1
