"""Businesses and their locations: the first location of a new business, review sites and
wording per location, what a location sets differently, and the cached settings that carry it."""

from __future__ import annotations

from datetime import time

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction

from accounts.models import Location
from accounts.services import location_create, location_move, location_update
from reviews.models import (
    BusinessSettings,
    LocationSettings,
    Message,
    MessageTemplate,
    ReviewSite,
    UnknownLocation,
)
from reviews.services import (
    business_create,
    business_settings_update,
    contact_add,
    location_rows_pin,
    location_settings_update,
    message_template_reset,
    message_template_save,
    review_site_add,
    review_site_move,
    review_sites_reorder,
)
from tests.factories import (
    ContactFactory,
    LocationFactory,
    ReviewRequestFactory,
    ReviewSiteFactory,
    UserFactory,
    first_location,
)
from tests.support.contacts import contact_input

pytestmark = pytest.mark.django_db

PASSWORD = "a long enough passphrase"


@pytest.fixture
def account():
    owner = UserFactory(business_name="Acme", time_zone="America/New_York")
    return (
        owner,
        first_location(owner, name="Downtown"),
        LocationFactory(account=owner, name="Uptown", time_zone="America/Chicago"),
    )


def test_a_new_business_gets_one_location_holding_its_sites():
    owner = business_create(
        email="o@example.com",
        password=PASSWORD,
        business_name="Acme Plumbing",
        time_zone="Europe/London",
        review_urls=["https://g.page/r/acme/review", "https://www.trustpilot.com/review/acme"],
    )
    [location] = Location.objects.filter(account=owner)
    assert (location.name, location.time_zone, location.position) == (
        "Acme Plumbing",
        "Europe/London",
        0,
    )
    assert list(
        ReviewSite.objects.filter(owner=owner).order_by("position").values_list("location", "label")
    ) == [(location.pk, "Google"), (location.pk, "Trustpilot")]


def test_a_site_is_added_last_at_its_location_and_reordered_there(account):
    owner, downtown, uptown = account
    a = review_site_add(owner=owner, url="https://g.page/r/a/review")
    b = review_site_add(owner=owner, url="https://g.page/r/b/review", location_id=uptown.pk)
    c = review_site_add(owner=owner, url="https://facebook.com/c", location_id=uptown.pk)
    assert (a.location_id, a.position) == (downtown.pk, 0)
    assert [(s.location_id, s.position) for s in (b, c)] == [(uptown.pk, 0), (uptown.pk, 1)]
    assert review_site_move(owner=owner, site_id=c.pk, offset=-1)
    assert list(
        ReviewSite.objects.filter(location=uptown).order_by("position").values_list("pk", flat=True)
    ) == [c.pk, b.pk]
    with pytest.raises(ValidationError):  # Downtown's list is not Uptown's
        review_sites_reorder(owner=owner, site_ids=[a.pk, b.pk, c.pk], location_id=uptown.pk)
    review_sites_reorder(owner=owner, site_ids=[b.pk, c.pk], location_id=uptown.pk)
    with pytest.raises(UnknownLocation):
        review_site_add(
            owner=owner, url="https://g.page/r/x/review", location_id=LocationFactory().pk
        )


def test_two_locations_may_list_one_link_a_location_only_once(account):
    owner, _downtown, uptown = account
    review_site_add(owner=owner, url="https://facebook.com/acme")
    review_site_add(owner=owner, url="https://facebook.com/acme", location_id=uptown.pk)
    with pytest.raises(ValidationError, match="already exists at this location"):
        review_site_add(owner=owner, url="https://facebook.com/acme", location_id=uptown.pk)


def test_a_locations_first_site_releases_only_its_held_requests(account, time_machine):
    owner, downtown, uptown = account

    def add(location, email):
        return contact_add(
            owner=owner,
            data=contact_input(owner, {"email": email}),
            location_id=location.pk,
        ).review_request

    held_down, held_up = add(downtown, "a@example.com"), add(uptown, "b@example.com")
    for request in (held_down, held_up):
        assert request.messages.get(step=0).waiting_for_review_site
    review_site_add(owner=owner, url="https://g.page/r/up/review", location_id=uptown.pk)
    assert held_up.messages.get(step=0).status == Message.Status.PENDING
    assert held_down.messages.get(step=0).waiting_for_review_site


def test_a_location_sets_its_own_sender_address_and_window_and_the_rest_stays_the_accounts(
    account,
):
    owner, downtown, uptown = account
    business_settings_update(
        owner=owner, changes={"sender_name": "Acme", "postal_address": "1 Main"}
    )
    location_settings_update(
        owner=owner,
        location_id=uptown.pk,
        changes={
            "sender_name": "Acme Uptown",
            "send_window_start": time(10, 0),
            "send_window_end": time(18, 0),
        },
    )
    policy = BusinessSettings.for_owner(owner)
    up, down = policy.at(uptown.pk), policy.at(None)
    assert (up.sender_name, up.postal_address, up.time_zone) == (
        "Acme Uptown",
        "1 Main",
        "America/Chicago",
    )
    assert (up.send_window_start, up.send_window_end) == (time(10, 0), time(18, 0))
    assert (down.location_id, down.sender_name, down.send_window_start) == (
        downtown.pk,
        "Acme",
        time(8, 0),
    )
    assert policy.at(uptown.pk).at(None).location_id == downtown.pk
    with pytest.raises(UnknownLocation):
        policy.at(LocationFactory().pk)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"send_window_start": time(9, 0)}, "send_window_end"),
        ({"send_window_start": time(9, 0), "send_window_end": time(9, 0)}, "send_window_end"),
        ({"send_window_applies_to": "sometimes"}, "send_window_applies_to"),
    ],
)
def test_a_locations_settings_are_refused_whole(account, changes, field):
    owner, _, uptown = account
    with pytest.raises(ValidationError) as error:
        location_settings_update(owner=owner, location_id=uptown.pk, changes=changes)
    assert field in error.value.message_dict
    assert not LocationSettings.objects.exists()
    with pytest.raises(Location.DoesNotExist):
        location_settings_update(owner=UserFactory(), location_id=uptown.pk, changes={})


def test_the_cached_settings_follow_every_location_change(account):
    """The locations come with ``for_owner``'s one cached read; every change reaches it."""
    owner, _downtown, uptown = account
    assert [loc.name for loc in BusinessSettings.for_owner(owner).locations] == [
        "Downtown",
        "Uptown",
    ]
    location_update(account=owner, location_id=uptown.pk, time_zone="Europe/Paris")
    assert BusinessSettings.for_owner(owner).at(uptown.pk).time_zone == "Europe/Paris"
    location_move(account=owner, location_id=uptown.pk, position=0)
    assert BusinessSettings.for_owner(owner).at(None).location_id == uptown.pk
    harbour = location_create(account=owner, name="Harbour")
    assert not BusinessSettings.for_owner(owner).at(harbour.pk).has_review_site
    ReviewSiteFactory(owner=owner, location=harbour)
    assert BusinessSettings.for_owner(owner).at(harbour.pk).has_review_site
    location_settings_update(owner=owner, location_id=harbour.pk, changes={"sender_name": "H"})
    assert BusinessSettings.for_owner(owner).at(harbour.pk).sender_name == "H"
    LocationSettings.objects.filter(location=harbour).delete()
    assert BusinessSettings.for_owner(owner).at(harbour.pk).sender_name == ""


def test_sites_with_no_location_are_listed_at_the_default(account):
    owner, downtown, uptown = account
    ReviewSiteFactory(owner=owner)  # written by a release without locations
    policy = BusinessSettings.for_owner(owner)
    assert policy.at(downtown.pk).has_review_site and not policy.at(uptown.pk).has_review_site


def test_an_account_with_one_location_keeps_it_in_the_business_time_zone():
    owner = business_create(
        email="o@example.com", password=PASSWORD, business_name="Acme", time_zone="UTC"
    )
    business_settings_update(owner=owner, changes={"time_zone": "Asia/Tokyo"})
    assert Location.objects.get(account=owner).time_zone == "Asia/Tokyo"
    second = location_create(account=owner, name="Osaka")
    business_settings_update(owner=owner, changes={"time_zone": "Europe/Berlin"})
    assert set(Location.objects.filter(account=owner).values_list("time_zone", flat=True)) == {
        "Asia/Tokyo"
    }
    assert second.time_zone == "Asia/Tokyo"


def test_wording_is_the_accounts_or_a_locations_own(account):
    owner, _, uptown = account
    body = "{business_name}: {review_link}"
    mine = message_template_save(owner=owner, channel="sms", step=0, body=body)
    own = message_template_save(
        owner=owner, channel="sms", step=0, body="Up! " + body, location_id=uptown.pk
    )
    again = message_template_save(
        owner=owner, channel="sms", step=0, body="Up again! " + body, location_id=uptown.pk
    )
    assert (mine.location_id, own.pk) == (None, again.pk)
    assert MessageTemplate.objects.filter(owner=owner).count() == 2
    assert message_template_reset(owner=owner, channel="sms", step=0, location_id=uptown.pk)
    assert list(MessageTemplate.objects.filter(owner=owner)) == [mine]
    with pytest.raises(UnknownLocation):
        message_template_save(
            owner=owner, channel="sms", step=0, body=body, location_id=LocationFactory().pk
        )


def test_pinning_gives_rows_with_no_location_the_one_given_in_batches(account, monkeypatch):
    owner, downtown, _ = account
    monkeypatch.setattr("reviews.services.business.PIN_BATCH", 2)
    requests = [ReviewRequestFactory(contact=ContactFactory(owner=owner)) for _ in range(3)]
    ReviewSiteFactory(owner=owner)
    assert location_rows_pin(owner=owner, location_id=downtown.pk) == 4
    assert {r.location_id for r in type(requests[0]).objects.filter(owner=owner)} == {downtown.pk}
    assert location_rows_pin(owner=owner, location_id=downtown.pk) == 0


def test_a_row_never_points_at_another_businesss_location(account):
    owner, _, _ = account
    elsewhere = LocationFactory()
    rows = [
        ReviewSite(owner=owner, location=elsewhere, url="https://g.page/r/x/review", label="G"),
        MessageTemplate(
            owner=owner, location=elsewhere, channel="sms", step=0, body="{review_link}"
        ),
        LocationSettings(owner=owner, location=elsewhere),
    ]
    for row in rows:
        with pytest.raises(ValidationError) as error:
            row.full_clean()
        assert "A location of another business." in error.value.message_dict["location"]


def test_nothing_a_rolled_back_transaction_wrote_is_left_in_the_cached_settings():
    """An account made by hand without a location gets its first with its first site; if that
    transaction rolls back, the cached settings must not name the location that never was
    (a request would point at it)."""
    owner = UserFactory(is_staff=True)  # made without a location
    BusinessSettings.for_owner(owner)

    class Undo(Exception):
        pass

    with pytest.raises(Undo), transaction.atomic():
        review_site_add(owner=owner, url="https://g.page/r/x/review")
        raise Undo
    assert not Location.objects.filter(account=owner).exists()
    assert BusinessSettings.for_owner(owner).locations == ()
    request = contact_add(
        owner=owner, data=contact_input(owner, {"email": "a@example.com"})
    ).review_request
    assert request.location_id is None  # the default location, whichever it will be
    site = review_site_add(owner=owner, url="https://g.page/r/x/review")
    assert Location.objects.get(account=owner).pk == site.location_id
    assert request.messages.get(step=0).status == Message.Status.PENDING  # released
