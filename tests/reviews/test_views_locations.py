"""The public review page of a request at a location: that location's sites, in its order."""

from __future__ import annotations

import re

import pytest

from reviews.models import Click
from tests.factories import (
    ContactFactory,
    LocationFactory,
    ReviewRequestFactory,
    ReviewSiteFactory,
    UserFactory,
    first_location,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def account():
    owner = UserFactory(business_name="Acme")
    downtown = first_location(owner, name="Downtown")
    harbour = LocationFactory(account=owner, name="Harbour")
    sites = {
        "down_google": ReviewSiteFactory(
            owner=owner, location=downtown, label="G Down", position=1
        ),
        "down_fb": ReviewSiteFactory(owner=owner, location=downtown, label="FB Down", position=0),
        "unplaced": ReviewSiteFactory(owner=owner, label="Old site", position=2),
        "harbour": ReviewSiteFactory(owner=owner, location=harbour, label="G Harbour"),
    }
    return owner, downtown, harbour, sites


def labels(client, request) -> list[str]:
    page = client.get(f"/r/{request.token}/")
    assert page.status_code == 200
    return re.findall(
        r'<a class="button" href="/r/[^"]+/go/[^"]+/"[^>]*>([^<]+)</a>', page.content.decode()
    )


def test_the_page_lists_the_sites_of_the_requests_location_in_order(client, account):
    owner, downtown, harbour, _ = account
    at_harbour = ReviewRequestFactory(contact=ContactFactory(owner=owner), location=harbour)
    at_downtown = ReviewRequestFactory(contact=ContactFactory(owner=owner), location=downtown)
    assert labels(client, at_harbour) == ["G Harbour"]
    # The default location's sites include those with no location.
    assert labels(client, at_downtown) == ["FB Down", "G Down", "Old site"]


def test_a_request_with_no_location_shows_the_default_locations_sites(client, account):
    owner, *_ = account
    unplaced = ReviewRequestFactory(contact=ContactFactory(owner=owner))
    assert labels(client, unplaced) == ["FB Down", "G Down", "Old site"]


def test_a_location_without_a_site_shows_none_of_the_others(client, account):
    owner, *_ = account
    bare = LocationFactory(account=owner, name="Airport")
    request = ReviewRequestFactory(contact=ContactFactory(owner=owner), location=bare)
    page = client.get(f"/r/{request.token}/").content.decode()
    assert "has not listed a review site yet" in page
    assert labels(client, request) == []


def test_the_link_of_another_locations_site_is_not_followed(client, account):
    owner, _downtown, harbour, sites = account
    request = ReviewRequestFactory(contact=ContactFactory(owner=owner), location=harbour)
    elsewhere = client.get(f"/r/{request.token}/go/{sites['down_google'].pk}/")
    assert elsewhere.status_code == 404
    own = client.get(f"/r/{request.token}/go/{sites['harbour'].pk}/")
    assert own.status_code == 302 and own["Location"] == sites["harbour"].url
    assert list(Click.objects.values_list("site", flat=True)) == [sites["harbour"].pk]
