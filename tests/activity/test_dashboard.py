"""The staff dashboard's numbers (activity.dashboard): the same numbers on a known data set, and a
constant number of queries."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from activity.dashboard import staff_dashboard
from activity.services import activity_rollup_rebuild
from reviews.models import Contact
from tests.activity.conftest import add_at
from tests.factories import LocationFactory, ReviewSiteFactory
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


@pytest.mark.parametrize("rolled_up", [False, True])
def test_one_location_of_a_business(business, places, rolled_up):
    """Its requests and their messages' failures; the business's opt-outs (a contact opts out
    of every location). From the base tables, and from the rollup with the last minutes live."""
    if rolled_up:
        activity_rollup_rebuild(now=places["now"] - timedelta(hours=3))
    opt_outs = [("SMS", Contact.OptOutSource.SMS_REPLY.label, 1)]
    totals = {}
    for name in ("home", "pier"):
        data = staff_dashboard(owner_id=business.pk, location_id=places[name].pk)
        totals[name] = [s.total for s in data.series]
        assert data.opt_outs == opt_outs
        if name == "pier":
            assert data.failure_reasons == [("spam", "Spam complaint", 1)]
            assert (data.sent_in_period, data.clicked_in_period) == (1, 0)
        else:
            assert data.failure_reasons == [("bounced", "Hard bounce", 1)]
            assert (data.sent_in_period, data.clicked_in_period) == (2, 1)
    # scheduled, sent, delivered, clicked, failed
    assert totals == {"home": [4, 2, 1, 1, 1], "pier": [3, 1, 1, 0, 1]}
    whole = staff_dashboard(owner_id=business.pk)
    assert [s.total for s in whole.series] == [7, 3, 2, 1, 2]
    assert len(whole.failure_reasons) == 2 and whole.opt_outs == opt_outs


def test_a_location_needs_its_business():
    with pytest.raises(ValueError, match="location_id"):
        staff_dashboard(location_id=LocationFactory.build().pk)


@pytest.mark.parametrize("rolled_up", [False, True])
def test_the_number_of_queries_of_one_location_does_not_grow_with_locations_or_data(
    business, places, rolled_up, django_assert_num_queries
):
    """The business's default location: one query more than the whole business's."""
    if rolled_up:
        activity_rollup_rebuild(now=places["now"] - timedelta(hours=3))
    pier = places["pier"]
    # State, rollup (when it serves), the live series, failure codes, their newest texts,
    # opt-outs; and the default location.
    budget = 7 if rolled_up else 6
    with django_assert_num_queries(budget):
        staff_dashboard(owner_id=business.pk, location_id=pier.pk)
    for n in range(5):
        place = LocationFactory(account=business)
        ReviewSiteFactory(owner=business, location=place, url=f"https://g.page/r/more-{n}/review")
        request = add_at(business, place, created_at=timezone.now(), email=f"more{n}@example.com")
        fail(request, at=timezone.now(), code=f"code-{n}", error=f"Error {n}")
        fail(
            add_at(business, pier, created_at=timezone.now(), email=f"pier{n}@example.com"),
            at=timezone.now(),
            code=f"pier-{n}",
            error=f"Pier error {n}",
        )
    with django_assert_num_queries(budget):
        data = staff_dashboard(owner_id=business.pk, location_id=pier.pk)
    assert len(data.failure_reasons) == 6
    with django_assert_num_queries(budget - 1):
        staff_dashboard(owner_id=business.pk)
