"""reviews 0014-0016: every business becomes an account with one location holding its review
sites, and back."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.support.migrations import migrate

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
BEFORE = [("reviews", "0013_activity_rollup_moved_to_activity"), ("accounts", "0001_initial")]
AFTER = [("reviews", "0016_locations_for_existing_businesses")]
BEFORE_0016 = [("reviews", "0015_location_request_indexes")]
ACTIVE = ["scheduled", "sending", "sent", "delivered"]
ENDED = ["clicked", "completed", "failed", "cancelled", "opted_out"]


@pytest.fixture
def apps_before_locations(latest_after_the_module, transactional_db):
    """The schema before locations (the latest again after the module)."""
    return migrate(BEFORE)


def old_owner(apps, email, **fields):
    return apps.get_model("accounts", "User").objects.create(email=email, password="!", **fields)


def old_business(apps):
    """An owner as the previous release left one: settings, two sites, own wording, and a
    request in every status (each with its first message)."""
    acme = old_owner(
        apps, "acme@example.com", business_name="Acme Plumbing", time_zone="Europe/Paris"
    )
    apps.get_model("reviews", "BusinessSettings").objects.create(owner=acme, sender_name="Acme")
    Site = apps.get_model("reviews", "ReviewSite")
    for position, url in enumerate(["https://g.page/r/acme/review", "https://facebook.com/acme"]):
        Site.objects.create(owner=acme, url=url, label=url[8:20], position=position)
    apps.get_model("reviews", "MessageTemplate").objects.create(
        owner=acme, channel="sms", step=0, body="{business_name}: {review_link}"
    )
    Contact = apps.get_model("reviews", "Contact")
    Request = apps.get_model("reviews", "ReviewRequest")
    for n, status in enumerate(ACTIVE + ENDED):
        contact = Contact.objects.create(
            owner=acme, email=f"c{n}@example.com", email_normalized=f"c{n}@example.com"
        )
        ended = {"ended_at": T0, "ended_reason": "clicked"} if status in ENDED else {}
        request = Request.objects.create(
            owner=acme, contact=contact, status=status, scheduled_for=T0, **ended
        )
        apps.get_model("reviews", "Message").objects.create(
            review_request=request, step=0, channel="email", status="sent", due_at=T0
        )
    return acme


def rows_of(apps, model):
    Model = apps.get_model("reviews", model)
    fields = [f.attname for f in Model._meta.concrete_fields]
    return {row["id"]: row for row in Model.objects.values(*fields)}


def test_every_business_gets_one_location_holding_its_sites_and_no_request_moves(
    apps_before_locations, capsys
):
    acme = old_business(apps_before_locations)
    nameless = old_owner(apps_before_locations, "nameless@example.com", time_zone="Asia/Tokyo")
    staff = old_owner(apps_before_locations, "staff@example.com", is_staff=True)
    staff_with_site = old_owner(apps_before_locations, "staff-owner@example.com", is_staff=True)
    apps_before_locations.get_model("reviews", "ReviewSite").objects.create(
        owner=staff_with_site, url="https://g.page/r/s/review", label="S"
    )
    requests, messages = (
        rows_of(apps_before_locations, "ReviewRequest"),
        rows_of(apps_before_locations, "Message"),
    )

    apps = migrate(AFTER)

    assert "Locations created: 3; review sites attached: 3." in capsys.readouterr().out
    Location = apps.get_model("accounts", "Location")
    made = {
        loc.account_id: (loc.name, loc.time_zone, loc.position) for loc in Location.objects.all()
    }
    assert made == {
        acme.pk: ("Acme Plumbing", "Europe/Paris", 0),
        nameless.pk: ("nameless@example.com", "Asia/Tokyo", 0),
        staff_with_site.pk: ("staff-owner@example.com", "UTC", 0),
    }
    assert staff.pk not in made
    home = Location.objects.get(account_id=acme.pk)
    Site = apps.get_model("reviews", "ReviewSite")
    assert set(Site.objects.filter(owner_id=acme.pk).values_list("location_id", flat=True)) == {
        home.pk
    }
    # Requests (every status), their messages and the wording are as they were: a request
    # with no location is the default location's.
    after = rows_of(apps, "ReviewRequest")
    assert {pk: {**row, "location_id": None} for pk, row in after.items()} == {
        pk: {**row, "location_id": None} for pk, row in requests.items()
    }
    assert {row["location_id"] for row in after.values()} == {None}
    assert {row["status"] for row in after.values()} == set(ACTIVE + ENDED)
    assert rows_of(apps, "Message") == messages
    assert list(
        apps.get_model("reviews", "MessageTemplate").objects.values_list("location_id", flat=True)
    ) == [None]
    User = apps.get_model("accounts", "User")
    assert set(User.objects.values_list("role", "account_id")) == {("owner", None)}

    migrate(AFTER)  # run again: nothing more
    assert Location.objects.count() == 3


def test_back_to_no_locations(apps_before_locations):
    acme = old_business(apps_before_locations)
    apps = migrate(AFTER)
    Location = apps.get_model("accounts", "Location")
    pier = Location.objects.create(account_id=acme.pk, name="Pier", time_zone="UTC", position=1)
    Site = apps.get_model("reviews", "ReviewSite")
    Site.objects.create(owner_id=acme.pk, location=pier, url="https://facebook.com/acme", label="F")
    apps.get_model("reviews", "MessageTemplate").objects.create(
        owner_id=acme.pk, location=pier, channel="sms", step=0, body="{business_name}"
    )
    Request = apps.get_model("reviews", "ReviewRequest")
    ended = Request.objects.filter(status="completed").get()
    Request.objects.filter(pk=ended.pk).update(location=pier)
    statuses = dict(Request.objects.values_list("pk", "status"))

    old = migrate(BEFORE)

    OldRequest = old.get_model("reviews", "ReviewRequest")
    assert dict(OldRequest.objects.values_list("pk", "status")) == statuses
    assert sorted(old.get_model("reviews", "ReviewSite").objects.values_list("url", flat=True)) == [
        "https://facebook.com/acme",
        "https://g.page/r/acme/review",
    ]
    assert old.get_model("reviews", "MessageTemplate").objects.count() == 1


def test_back_is_refused_while_a_contact_has_active_requests_at_two_locations(
    apps_before_locations,
):
    acme = old_business(apps_before_locations)
    apps = migrate(AFTER)
    pier = apps.get_model("accounts", "Location").objects.create(
        account_id=acme.pk, name="Pier", time_zone="UTC", position=1
    )
    Request = apps.get_model("reviews", "ReviewRequest")
    active = Request.objects.filter(status="scheduled").get()
    Request.objects.create(
        owner_id=acme.pk, contact_id=active.contact_id, location=pier, scheduled_for=T0
    )
    # Undoing 0016 alone: its way back is the one that refuses (and the cheap one to replay).
    with pytest.raises(RuntimeError, match="active review requests at two locations"):
        migrate(BEFORE_0016)
