"""The staff dashboard's numbers (activity.dashboard): the same numbers on a known data set, and a
constant number of queries."""

from __future__ import annotations

import pytest
from django.utils import timezone

from activity.dashboard import staff_dashboard
from reviews.models import Contact
from tests.support.portal_data import add_request, fail

pytestmark = pytest.mark.django_db


def test_the_numbers_of_a_known_data_set(business, known):
    data = staff_dashboard(owner_id=business.pk)
    series = {s.key: s for s in data.series}
    assert {key: s.total for key, s in series.items()} == {
        "scheduled": 5,
        "sent": 1,
        "delivered": 1,
        "clicked": 1,
        "failed": 3,
    }
    assert data.sent_in_period == 1 and data.click_through_rate == 100.0
    assert data.failure_reasons == [
        ("bounced", "Hard bounce: the newest one", 2),
        ("spam", "Spam complaint", 1),
    ]
    assert data.opt_outs == [("SMS", Contact.OptOutSource.SMS_REPLY.label, 1)]

    everyone = staff_dashboard()
    assert [s.total for s in everyone.series] == [6, 1, 1, 1, 3]
    assert len(everyone.series[0].counts) == 30


def test_the_number_of_queries_does_not_grow_with_the_data(
    business, known, django_assert_num_queries
):
    with django_assert_num_queries(5):
        staff_dashboard(owner_id=business.pk)
    for n in range(5):
        request = add_request(business, email=f"more{n}@example.com")
        fail(request, at=timezone.now(), code=f"code-{n}", error=f"Error {n}")
    with django_assert_num_queries(5):
        staff_dashboard(owner_id=business.pk)
    with django_assert_num_queries(5):
        staff_dashboard()
