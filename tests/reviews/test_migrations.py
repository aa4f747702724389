"""The reviews app's migrations: its data migrations, run forwards from the migration before them,
and the schema PostgreSQL really has (what the migrations built, not what the models say); and
0014-0016, where every business becomes an account with one location, and back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.apps import apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE_REKEY = [("reviews", "0004_covered_foreign_key_indexes")]
REKEY = [("reviews", "0005_email_key_idna")]
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
FULL_WIDTH_EXAMPLE = "\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45"  # "example", full-width
FULL_WIDTH_DOT_COM_EXAMPLE = FULL_WIDTH_EXAMPLE + "\uff0e\uff43\uff4f\uff4d"  # all full-width


def migrate(targets):
    """Migrate to ``targets``; the historical apps there."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


@pytest.fixture
def old_apps(transactional_db):
    """The schema just before the re-key, and back to the latest afterwards."""
    apps = migrate(BEFORE_REKEY)
    yield apps
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def make_contact(apps, owner, email, *, age_days, **fields):
    """A contact stored as the code before the re-key stored it (key: NFC, lower case)."""
    contact = apps.get_model("reviews", "Contact").objects.create(
        owner_id=owner.pk, email=email, email_normalized=email.lower(), **fields
    )
    created = T0 - timedelta(days=age_days)
    type(contact).objects.filter(pk=contact.pk).update(created_at=created)
    return contact


def make_request(apps, contact, status, **fields):
    ended = {} if status in {"scheduled", "sent"} else {"ended_at": T0, "ended_reason": "clicked"}
    request = apps.get_model("reviews", "ReviewRequest").objects.create(
        owner_id=contact.owner_id,
        contact_id=contact.pk,
        scheduled_for=T0,
        status=status,
        **ended,
        **fields,
    )
    apps.get_model("reviews", "Message").objects.create(
        review_request_id=request.pk,
        step=0,
        channel="email",
        status="pending" if status == "scheduled" else "sent",
        due_at=T0,
    )
    return request


def make_owner(apps, email):
    return apps.get_model("accounts", "User").objects.create(email=email, password="!")


def test_rekey_merges_two_spellings_of_one_mailbox_into_the_older_contact(old_apps, capsys):
    owner = make_owner(old_apps, "owner@example.com")
    older = make_contact(
        old_apps,
        owner,
        "x@bücher.de",
        age_days=30,
        first_name="Jane",
        metadata={"from": "older", "shop": "a"},
    )
    newer = make_contact(
        old_apps,
        owner,
        "X@xn--bcher-kva.de",
        age_days=2,
        last_name="Smith",
        phone="+14155552671",
        company_name="Acme",
        metadata={"from": "newer", "order": 7},
        email_opted_out_at=T0,
        email_opt_out_source="email_unsubscribe",
    )
    ended = make_request(old_apps, older, "completed", sent_at=T0)
    kept_active = make_request(old_apps, older, "scheduled")
    duplicate = make_request(old_apps, newer, "sent", sent_at=T0)
    old_apps.get_model("reviews", "OptOutEvent").objects.create(
        owner_id=owner.pk,
        contact_id=newer.pk,
        channel="email",
        action="opt_out",
        source="email_unsubscribe",
        address=newer.email,
    )
    # Another owner's contact with the same mailbox is theirs: re-keyed, not merged.
    stranger = make_contact(
        old_apps, make_owner(old_apps, "other@example.com"), "x@bücher.de", age_days=1
    )
    plain = make_contact(old_apps, owner, "Bob@Example.com", age_days=5)

    apps = migrate(REKEY)

    Contact = apps.get_model("reviews", "Contact")
    ReviewRequest = apps.get_model("reviews", "ReviewRequest")
    assert set(Contact.objects.filter(owner_id=owner.pk).values_list("pk", flat=True)) == {
        older.pk,
        plain.pk,
    }
    merged = Contact.objects.get(pk=older.pk)
    assert merged.email == "x@bücher.de"  # the older contact's address, as typed
    assert merged.email_normalized == "x@xn--bcher-kva.de"
    assert (merged.first_name, merged.last_name, merged.company_name) == ("Jane", "Smith", "Acme")
    assert merged.phone == "+14155552671"
    assert merged.metadata == {"from": "older", "shop": "a", "order": 7}
    assert (merged.email_opted_out_at, merged.email_opt_out_source) == (T0, "email_unsubscribe")
    assert set(ReviewRequest.objects.filter(contact_id=older.pk).values_list("pk", flat=True)) == {
        ended.pk,
        kept_active.pk,
        duplicate.pk,
    }
    # One active request per contact: the newer contact's is ended, its open messages with it.
    assert ReviewRequest.objects.get(pk=kept_active.pk).status == "scheduled"
    cancelled = ReviewRequest.objects.get(pk=duplicate.pk)
    assert (cancelled.status, cancelled.ended_reason) == ("cancelled", "cancelled")
    assert cancelled.ended_at is not None
    event = apps.get_model("reviews", "OptOutEvent").objects.get()
    assert event.contact_id == older.pk
    assert Contact.objects.get(pk=stranger.pk).email_normalized == "x@xn--bcher-kva.de"
    assert Contact.objects.get(pk=plain.pk).email_normalized == "bob@example.com"
    assert "Contacts re-keyed: 2; merged into an older contact: 1." in capsys.readouterr().out


def test_rekey_moves_the_active_request_of_a_newer_contact_and_keeps_every_opt_out(
    old_apps, capsys
):
    owner = make_owner(old_apps, "owner@example.com")
    older = make_contact(
        old_apps,
        owner,
        "x@example.com",
        age_days=10,
        phone="+14155552671",
        sms_opted_out_at=T0,
        sms_opt_out_source="sms_reply",
        email_opted_out_at=T0,
        email_opt_out_source="owner",
    )
    newest = make_contact(old_apps, owner, f"x@{FULL_WIDTH_DOT_COM_EXAMPLE}", age_days=1)
    newer = make_contact(
        old_apps,
        owner,
        f"x@{FULL_WIDTH_EXAMPLE}.com",
        age_days=3,
        phone="+14155550100",
        email_opted_out_at=T0 - timedelta(days=3),
        email_opt_out_source="email_complaint",
    )
    moved = make_request(old_apps, newer, "scheduled")
    cancelled = make_request(old_apps, newest, "scheduled")

    apps = migrate(REKEY)

    Contact = apps.get_model("reviews", "Contact")
    ReviewRequest = apps.get_model("reviews", "ReviewRequest")
    Message = apps.get_model("reviews", "Message")
    kept = Contact.objects.get()
    assert kept.pk == older.pk
    assert kept.email_normalized == "x@example.com"
    assert kept.phone == "+14155552671"  # the older contact's phone is kept
    assert (kept.sms_opted_out_at, kept.sms_opt_out_source) == (T0, "sms_reply")
    # Two opt-outs of one channel: the earlier.
    assert (kept.email_opted_out_at, kept.email_opt_out_source) == (
        T0 - timedelta(days=3),
        "email_complaint",
    )
    # The older of the newer contacts' active requests goes first and stays active.
    assert ReviewRequest.objects.get(pk=moved.pk).status == "scheduled"
    assert ReviewRequest.objects.get(pk=cancelled.pk).status == "cancelled"
    assert Message.objects.get(review_request_id=cancelled.pk).status == "cancelled"
    assert Message.objects.get(review_request_id=moved.pk).status == "pending"
    assert set(ReviewRequest.objects.values_list("contact_id", flat=True)) == {older.pk}
    assert "Contacts re-keyed: 0; merged into an older contact: 2." in capsys.readouterr().out


def test_rekey_leaves_ascii_keys_alone_and_keeps_refused_domains(old_apps, capsys):
    owner = make_owner(old_apps, "owner@example.com")
    ascii_contact = make_contact(old_apps, owner, "Jane.Smith@Example.COM", age_days=1)
    # Accepted before the new rules; kept, keyed as before (lower case).
    local = make_contact(old_apps, owner, "ops@localhost", age_days=1)
    symbol = make_contact(old_apps, owner, "X@\u2603.com", age_days=1)

    apps = migrate(REKEY)

    keys = dict(apps.get_model("reviews", "Contact").objects.values_list("pk", "email_normalized"))
    assert keys == {
        ascii_contact.pk: "jane.smith@example.com",
        local.pk: "ops@localhost",
        symbol.pk: "x@\u2603.com",
    }
    assert "Contacts re-keyed: 0; merged into an older contact: 0." in capsys.readouterr().out


BEFORE_DAILY = [("reviews", "0011_contact_address_keys")]
DAILY = [("reviews", "0012_activity_daily_rollup")]


def test_the_daily_rollup_is_filled_from_the_hours_already_rolled_up(transactional_db):
    from tests.factories import UserFactory

    apps = migrate(BEFORE_DAILY)
    owner, other = UserFactory(), UserFactory()
    hourly = apps.get_model("reviews", "ActivityRollup")
    for at, who, metric, count in [
        (T0, owner, "sent", 2),
        (T0 + timedelta(hours=5), owner, "sent", 3),
        (T0 + timedelta(days=1), owner, "sent", 7),
        (T0, owner, "clicked", 1),
        (T0, other, "sent", 4),
    ]:
        hourly.objects.create(owner_id=who.pk, hour=at, metric=metric, count=count)
    try:
        daily = migrate(DAILY).get_model("reviews", "ActivityDailyRollup")
        rows = daily.objects.values_list("owner_id", "day", "metric", "count")
        assert set(rows) == {
            (owner.pk, T0.date(), "sent", 5),
            (owner.pk, T0.date() + timedelta(days=1), "sent", 7),
            (owner.pk, T0.date(), "clicked", 1),
            (other.pk, T0.date(), "sent", 4),
        }
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


OUR_APPS = ("accounts", "reviews", "activity", "connector_api", "oauth_provider")


def _our_models() -> list:
    return [
        model
        for app in OUR_APPS
        for model in apps.get_app_config(app).get_models()
        if not model._meta.proxy
    ]


def _our_tables() -> list[str]:
    return [model._meta.db_table for model in _our_models()]


@pytest.mark.django_db
@pytest.mark.postgres
def test_no_index_of_ours_repeats_the_leading_columns_of_another():
    """Every index is written on each insert (and on each update that is not HOT): one whose
    columns lead another index of the same table serves no lookup the other does not.
    Django indexes each ForeignKey by itself, so a foreign key that leads a composite index
    is declared ``db_index=False`` (reviews 0004). A unique or partial index is not
    redundant this way (it enforces a rule, or covers other rows)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT a.indrelid::regclass::text, a.indexrelid::regclass::text,
                   b.indexrelid::regclass::text
            FROM pg_index a
            JOIN pg_index b ON b.indrelid = a.indrelid AND b.indexrelid <> a.indexrelid
            WHERE a.indrelid::regclass::text = ANY(%s)
              AND NOT a.indisunique AND a.indpred IS NULL
              AND (b.indkey::text LIKE a.indkey::text || ' %%'
                   OR (b.indkey::text = a.indkey::text AND b.indpred IS NULL
                       AND (b.indisunique OR b.indexrelid < a.indexrelid)))
              AND NOT EXISTS (SELECT 1 FROM pg_opclass o WHERE o.oid = ANY(a.indclass)
                              AND o.opcname LIKE '%%pattern_ops')
            ORDER BY 1, 2
            """,
            [_our_tables()],
        )
        redundant = cursor.fetchall()
    assert redundant == []


@pytest.mark.django_db
@pytest.mark.postgres
def test_the_review_requests_token_has_no_like_index_and_one_unique_constraint():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'reviews_reviewrequest' "
            "AND indexdef LIKE '%%(token%%'"
        )
        indexes = [name for (name,) in cursor.fetchall()]
    assert indexes == ["reviews_request_token_unique"]


@pytest.mark.django_db
@pytest.mark.postgres
def test_foreign_keys_left_without_their_own_index_still_lead_an_index():
    """The other half of the first test: dropping a foreign key's own index is only right
    while a composite index starts with that column (lookups and ON DELETE cascades)."""
    missing = []
    with connection.cursor() as cursor:
        for model in _our_models():
            table = model._meta.db_table
            leading = {
                index["columns"][0]
                for index in connection.introspection.get_constraints(cursor, table).values()
                if (index["index"] or index["unique"]) and index["columns"]
            }
            for field in model._meta.concrete_fields:
                if field.is_relation and field.many_to_one and field.column not in leading:
                    missing.append(f"{table}.{field.column}")
    assert missing == []


# --- 0014-0016: every business becomes an account with one location, and back -----------------

BEFORE = [("reviews", "0013_activity_rollup_moved_to_activity"), ("accounts", "0001_initial")]
AFTER = [("reviews", "0016_locations_for_existing_businesses")]
ACTIVE = ["scheduled", "sending", "sent", "delivered"]
ENDED = ["clicked", "completed", "failed", "cancelled", "opted_out"]


@pytest.fixture
def apps_before_locations(transactional_db):
    """The schema before locations, and back to the latest afterwards."""
    apps = migrate(BEFORE)
    yield apps
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


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
