"""reviews.services.business: creating a business, its settings, and its review sites (the kind and
label a link gets, the place a new site takes, an edit by the same rules); no review request leaves
while the business lists no review site, and adding one sends the waiting requests through the
dispatcher's normal path. Locations: the first location of a new business, sites and wording per
location, what a location sets differently, and the cached settings that carry it."""

from __future__ import annotations

from datetime import UTC, datetime, time

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
    messages_dispatch_due,
    review_site_add,
    review_site_move,
    review_site_update,
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
from tests.support.delivery import dispatch_and_send, email_request, reload, sms_request, step

pytestmark = pytest.mark.django_db


# --- settings -------------------------------------------------------------------------------------


def test_business_create_creates_the_review_settings_with_the_defaults(db):
    owner = business_create(
        email="owner@example.com", password="a long passphrase 42", business_name="Acme"
    )
    policy = owner.review_settings
    assert policy.initial_channel == BusinessSettings.InitialChannel.SMS
    assert policy.follow_up_offsets_hours == [72, 168]
    assert policy.follow_up_other_channel is True
    assert policy.cooldown_days == 90
    assert (policy.send_window_start, policy.send_window_end) == (time(8), time(21))
    assert policy.send_window_applies_to == BusinessSettings.WindowAppliesTo.SMS
    assert policy.default_delay_hours == 0


def test_the_service_reports_errors_of_both_rows_at_once(owner):
    with pytest.raises(ValidationError) as caught:
        business_settings_update(
            owner=owner, changes={"time_zone": "Nowhere/Land", "cooldown_days": 99999}
        )
    assert set(caught.value.message_dict) == {"time_zone", "cooldown_days"}


def test_the_service_refuses_fields_an_owner_may_not_change(owner):
    with pytest.raises(ValueError, match="is_staff"):
        business_settings_update(owner=owner, changes={"is_staff": True})
    owner.refresh_from_db()
    assert owner.is_staff is False


# --- review sites ---------------------------------------------------------------------------------


def sites(owner) -> list[tuple[str, str, int]]:
    return list(
        ReviewSite.objects.filter(owner=owner)
        .order_by("position", "created_at")
        .values_list("kind", "label", "position")
    )


def test_a_site_added_without_a_position_goes_last(owner):
    """``owner`` lists one Google site, at position 0."""
    review_site_add(owner=owner, url="https://www.trustpilot.com/review/acme.example")
    review_site_add(owner=owner, url="https://www.facebook.com/acme", label="FB", position=0)
    assert sites(owner) == [
        ("google", "Google", 0),
        ("facebook", "FB", 0),
        ("trustpilot", "Trustpilot", 1),
    ]


def test_an_update_follows_the_new_link_and_keeps_the_place_unless_given_one(owner):
    site = ReviewSite.objects.get(owner=owner)
    ReviewSite.objects.filter(pk=site.pk).update(position=2)
    updated = review_site_update(owner=owner, site_id=site.pk, url="https://www.acme.example/r")
    assert (updated.kind, updated.label, updated.position) == ("custom", "acme.example", 2)
    review_site_update(
        owner=owner, site_id=site.pk, url="https://g.page/r/acme", label="Us", position=0
    )
    assert sites(owner) == [("google", "Us", 0)]


def test_an_update_is_refused_like_an_add_and_saves_nothing(owner, other_owner):
    site = ReviewSite.objects.get(owner=owner)
    before = sites(owner)
    with pytest.raises(ValidationError) as refused:
        review_site_update(owner=owner, site_id=site.pk, url="https://www.yelp.com/biz/acme")
    assert refused.value.message_dict == {
        "url": ["Yelp does not allow asking customers for reviews."]
    }
    with pytest.raises(ValidationError):
        review_site_update(owner=owner, site_id=site.pk, url="https://g.page/r/x", label="x" * 81)
    assert sites(owner) == before
    theirs = ReviewSite.objects.get(owner=other_owner)
    with pytest.raises(ReviewSite.DoesNotExist):
        review_site_update(owner=owner, site_id=theirs.pk, url="https://g.page/r/mine")


# --- no review site yet: requests wait, and go once a site is added -------------------------------


NOON_IN_NEW_YORK = datetime(2026, 6, 10, 16, 0, tzinfo=UTC)


# 02:00 in New York: outside the default SMS window (08:00-21:00 on the recipient's clock).
NIGHT_IN_NEW_YORK = datetime(2026, 6, 11, 6, 0, tzinfo=UTC)


def test_adding_a_site_sends_the_waiting_requests(siteless, mailoutbox):
    request = email_request(siteless)
    assert dispatch_and_send() == []

    review_site_add(owner=siteless, url="https://g.page/r/acme/review")

    first = step(request, 0)
    assert first.status == "pending" and not first.waiting_for_review_site
    assert (first.last_error, first.last_error_code) == ("", "")
    assert dispatch_and_send() == ["sent"]
    assert reload(request).status == "sent"
    (email,) = mailoutbox
    assert request.public_url() in email.body


def test_a_released_sms_still_waits_for_the_sending_window(siteless, time_machine):
    BusinessSettings.objects.filter(owner=siteless).update(
        send_window_applies_to=BusinessSettings.WindowAppliesTo.SMS,
        send_window_start=time(8),
        send_window_end=time(21),
    )
    BusinessSettings.invalidate_cached(siteless.pk)
    time_machine.move_to(NOON_IN_NEW_YORK, tick=False)
    request = sms_request(siteless, phone="+12125550123")  # New York

    time_machine.move_to(NIGHT_IN_NEW_YORK, tick=False)
    review_site_add(owner=siteless, url="https://g.page/r/acme/review")

    first = step(request, 0)
    opens = datetime(2026, 6, 11, 12, 0, tzinfo=UTC)  # 08:00 in New York
    assert (first.status, first.due_at) == ("pending", opens)
    assert reload(request).scheduled_for == opens
    assert messages_dispatch_due().claimed == []


# --- Locations: first location, sites and wording per location, own settings, the cache -------

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
