"""Migrations 0014-0016 of reviews (with accounts 0002): every business becomes an account with
one location, on a copy of a database holding requests in every status; and back."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("reviews", "0013_activity_rollup_moved_to_activity"), ("accounts", "0001_initial")]
AFTER = [("reviews", "0016_locations_for_existing_businesses")]
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
ACTIVE = ["scheduled", "sending", "sent", "delivered"]
ENDED = ["clicked", "completed", "failed", "cancelled", "opted_out"]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


@pytest.fixture
def old_apps(transactional_db):
    """The schema before locations, and back to the latest afterwards."""
    apps = migrate(BEFORE)
    yield apps
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def owner(apps, email, **fields):
    return apps.get_model("accounts", "User").objects.create(email=email, password="!", **fields)


def business(apps):
    """An owner as the previous release left one: settings, two sites, own wording, and a
    request in every status (each with its first message)."""
    acme = owner(apps, "acme@example.com", business_name="Acme Plumbing", time_zone="Europe/Paris")
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


def rows(apps, model):
    Model = apps.get_model("reviews", model)
    fields = [f.attname for f in Model._meta.concrete_fields]
    return {row["id"]: row for row in Model.objects.values(*fields)}


def test_every_business_gets_one_location_holding_its_sites_and_no_request_moves(old_apps, capsys):
    acme = business(old_apps)
    nameless = owner(old_apps, "nameless@example.com", time_zone="Asia/Tokyo")
    staff = owner(old_apps, "staff@example.com", is_staff=True)
    staff_with_site = owner(old_apps, "staff-owner@example.com", is_staff=True)
    old_apps.get_model("reviews", "ReviewSite").objects.create(
        owner=staff_with_site, url="https://g.page/r/s/review", label="S"
    )
    requests, messages = rows(old_apps, "ReviewRequest"), rows(old_apps, "Message")

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
    after = rows(apps, "ReviewRequest")
    assert {pk: {**row, "location_id": None} for pk, row in after.items()} == {
        pk: {**row, "location_id": None} for pk, row in requests.items()
    }
    assert {row["location_id"] for row in after.values()} == {None}
    assert {row["status"] for row in after.values()} == set(ACTIVE + ENDED)
    assert rows(apps, "Message") == messages
    assert list(
        apps.get_model("reviews", "MessageTemplate").objects.values_list("location_id", flat=True)
    ) == [None]
    User = apps.get_model("accounts", "User")
    assert set(User.objects.values_list("role", "account_id")) == {("owner", None)}

    migrate(AFTER)  # run again: nothing more
    assert Location.objects.count() == 3


def test_back_to_no_locations(old_apps):
    acme = business(old_apps)
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


def test_back_is_refused_while_a_contact_has_active_requests_at_two_locations(old_apps):
    acme = business(old_apps)
    apps = migrate(AFTER)
    pier = apps.get_model("accounts", "Location").objects.create(
        account_id=acme.pk, name="Pier", time_zone="UTC", position=1
    )
    Request = apps.get_model("reviews", "ReviewRequest")
    active = Request.objects.filter(status="scheduled").get()
    Request.objects.create(
        owner_id=acme.pk, contact_id=active.contact_id, location=pier, scheduled_for=T0
    )
    with pytest.raises(RuntimeError, match="active review requests at two locations"):
        migrate(BEFORE)


@pytest.mark.postgres
def test_the_new_unique_index_is_built_and_the_old_one_dropped_on_postgresql(transactional_db):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'reviews_reviewrequest'"
            " AND indexname LIKE 'reviews_request_one_active%%' OR indexname = "
            "'reviews_request_location_list'"
        )
        indexes = dict(cursor.fetchall())
    assert set(indexes) == {
        "reviews_request_one_active_per_contact_location",
        "reviews_request_location_list",
    }
    assert (
        "COALESCE(location_id, '00000000-0000-0000-0000-000000000000'::uuid)"
        in indexes["reviews_request_one_active_per_contact_location"]
    )


def test_the_requests_location_is_a_validated_foreign_key_after_the_migrations(transactional_db):
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, "reviews_reviewrequest")
        keys = [c["foreign_key"] for c in constraints.values() if c["columns"] == ["location_id"]]
        assert ("accounts_location", "id") in keys
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT bool_and(convalidated) FROM pg_constraint WHERE contype = 'f' "
                "AND conrelid = 'reviews_reviewrequest'::regclass "
                "AND confrelid = 'accounts_location'::regclass"
            )
            assert cursor.fetchone() == (True,)
