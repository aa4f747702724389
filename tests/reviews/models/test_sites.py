"""Review sites (reviews.models.sites): whether each row's own location lists a site."""

from __future__ import annotations

import pytest

from reviews.models import ReviewRequest, ReviewSite
from tests.factories import (
    LocationFactory,
    ReviewRequestFactory,
    ReviewSiteFactory,
    first_location,
)

pytestmark = pytest.mark.django_db


def test_listed_for_row_asks_each_rows_own_location(owner):
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
        rows = ReviewRequest.objects.annotate(listed=ReviewSite.listed_for_row())
        return dict(rows.values_list("pk", "listed"))

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
