"""Review sites (reviews.models.sites): whether each row's own location lists a site."""

from __future__ import annotations

import pytest

from reviews.models import ReviewRequest, ReviewSite
from reviews.models.sites import Unlisted
from tests.factories import (
    LocationFactory,
    ReviewRequestFactory,
    ReviewSiteFactory,
    UserFactory,
    first_location,
)

pytestmark = pytest.mark.django_db


def test_unlisted_asks_each_rows_own_location(owner):
    """``owner`` lists one site, with no location: its default location's. A request at the
    default (by id or with no location) finds it; one at another location does not, until
    that location lists its own."""
    default = first_location(owner)
    other = LocationFactory(account=owner)
    at_default = ReviewRequestFactory(contact__owner=owner, location=default)
    unplaced = ReviewRequestFactory(contact__owner=owner, location=None)
    elsewhere = ReviewRequestFactory(contact__owner=owner, location=other)
    siteless = ReviewRequestFactory(location=None)  # another business, which lists none

    def listed() -> dict:
        waiting = ReviewRequest.objects.filter(ReviewSite.unlisted().rows_q())
        return {
            row.pk: not waiting.filter(pk=row.pk).exists()
            for row in (at_default, unplaced, elsewhere, siteless)
        }

    assert listed() == {
        at_default.pk: True,
        unplaced.pk: True,
        elsewhere.pk: False,
        siteless.pk: False,
    }
    ReviewSite.objects.update(location=default)  # pinned: the same for every row
    ReviewSiteFactory(owner=owner, location=other)
    assert listed() == {
        at_default.pk: True,
        unplaced.pk: True,
        elsewhere.pk: True,
        siteless.pk: False,
    }


def test_unlisted_only_looks_at_the_accounts_asked_for(owner):
    """Restricted to some accounts, another account's siteless locations are not named; the
    default of an account lists its sites with no location, another location does not."""
    default = first_location(owner)
    other = LocationFactory(account=owner)
    siteless = UserFactory()
    assert ReviewSite.unlisted(accounts=[owner.pk]) == Unlisted(
        location_ids=frozenset({other.pk}), default_of=frozenset()
    )
    everywhere = ReviewSite.unlisted()
    assert other.pk in everywhere.location_ids
    assert first_location(siteless).pk in everywhere.location_ids
    assert siteless.pk in everywhere.default_of
    assert default.pk not in everywhere.location_ids
    assert owner.pk not in everywhere.default_of


def test_a_condition_for_places_that_all_list_a_site_runs_no_query(
    owner, django_assert_num_queries
):
    unlisted = ReviewSite.unlisted(accounts=[owner.pk])
    assert unlisted == Unlisted(location_ids=frozenset(), default_of=frozenset())
    with django_assert_num_queries(0):
        assert ReviewRequest.objects.filter(unlisted.rows_q()).count() == 0
