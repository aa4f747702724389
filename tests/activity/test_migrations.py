"""The activity app's migrations: the rollup's move from reviews (Django's state only, nothing in
the database), 0002, which gives the rollup its locations on a database holding rollup rows,
and back, and 0003, the account's sums filled from the rows per location, and back."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, migrations
from django.db.migrations.loader import MigrationLoader
from django.utils import timezone

from activity.models import (
    ActivityAccountDailyRollup,
    ActivityAccountRollup,
    ActivityDailyRollup,
    ActivityRollup,
    ActivityRollupState,
)
from activity.services import activity_rollup_rebuild, activity_rollup_refresh
from tests.activity.conftest import add_at, hour_start
from tests.factories import LocationFactory, ReviewSiteFactory
from tests.support.migrations import migrate, migrate_to_latest
from tests.support.portal_data import send_first


@pytest.mark.parametrize(
    "app, name",
    [("activity", "0001_initial"), ("reviews", "0013_activity_rollup_moved_to_activity")],
)
def test_the_move_has_no_database_operation(app, name):
    migration = MigrationLoader(None, ignore_no_migrations=True).get_migration(app, name)
    for operation in migration.operations:
        assert isinstance(operation, migrations.SeparateDatabaseAndState)
        assert operation.database_operations == []


def test_the_models_keep_the_tables_reviews_made():
    assert [
        m._meta.db_table for m in (ActivityRollup, ActivityDailyRollup, ActivityRollupState)
    ] == [
        "reviews_activityrollup",
        "reviews_activitydailyrollup",
        "reviews_activityrollupstate",
    ]


BEFORE_LOCATIONS = [("activity", "0001_initial")]


@pytest.fixture
def rollup_before_locations(transactional_db, business):
    """A business with requests at two locations over the last days, and the rollup as the
    previous release left it (per owner, every location together, since the first event);
    back to the latest schema afterwards."""
    now = timezone.now()
    pier = LocationFactory(account=business, name="Pier")
    ReviewSiteFactory(owner=business, location=pier, url="https://g.page/r/pier/review")
    for n, (place, days) in enumerate([(None, 40), (None, 3), (pier, 3), (pier, 1)]):
        request = add_at(
            business, place, created_at=now - timedelta(days=days), email=f"p{n}@example.com"
        )
        send_first(request, at=now - timedelta(days=days, minutes=-5))
    closed_until = hour_start(now)
    apps = migrate(BEFORE_LOCATIONS)
    hourly = apps.get_model("activity", "ActivityRollup")
    first = hour_start(now - timedelta(days=40))
    rows = [(first, "scheduled", 1), (closed_until - timedelta(days=3), "scheduled", 2)]
    for hour, metric, count in rows:
        hourly.objects.create(owner_id=business.pk, hour=hour, metric=metric, count=count)
    apps.get_model("activity", "ActivityDailyRollup").objects.create(
        owner_id=business.pk, day=first.date(), metric="scheduled", count=1
    )
    apps.get_model("activity", "ActivityRollupState").objects.create(
        key="activity", covered_from=None, closed_until=closed_until, refreshed_at=now
    )
    yield {"now": now, "first": first, "closed_until": closed_until, "pier": pier}
    migrate_to_latest()


def test_locations_keep_the_rows_and_mark_their_hours_for_the_refreshes(
    business, rollup_before_locations, capsys
):
    before = rollup_before_locations
    migrate_to_latest()
    assert "re-derived by location by the next refreshes" in capsys.readouterr().out
    assert set(ActivityRollup.objects.values_list("location_id", "count")) == {(None, 1), (None, 2)}
    state = ActivityRollupState.objects.get()
    # The old hours are no longer read (the base tables are), and marked to re-derive.
    assert (state.covered_from, state.backfill_to) == (before["closed_until"], before["first"])

    # The refreshes complete it by themselves: the rows a rebuild writes.
    while ActivityRollupState.objects.get().backfill_to is not None:
        activity_rollup_refresh(now=before["now"])
    assert ActivityRollupState.objects.get().covered_from is None
    fields = ("owner_id", "location_id", "hour", "metric", "channel", "detail", "count")
    refreshed = set(ActivityRollup.objects.values_list(*fields))
    assert {(loc, n) for _, loc, _, metric, _, _, n in refreshed if metric == "sent"} >= {
        (before["pier"].pk, 1)
    }
    activity_rollup_rebuild(now=before["now"])
    assert set(ActivityRollup.objects.values_list(*fields)) == refreshed


def test_back_from_locations_empties_the_rollup(business, rollup_before_locations):
    migrate_to_latest()
    activity_rollup_rebuild()
    assert ActivityRollup.objects.filter(location=rollup_before_locations["pier"]).exists()

    old = migrate(BEFORE_LOCATIONS)

    for name in ("ActivityRollup", "ActivityDailyRollup", "ActivityRollupState"):
        assert not old.get_model("activity", name).objects.exists()
    hourly = old.get_model("activity", "ActivityRollup")
    hour = hour_start(timezone.now())
    hourly.objects.create(owner_id=business.pk, hour=hour, metric="sent", count=1)
    with pytest.raises(IntegrityError):  # the per-owner key is back
        hourly.objects.create(owner_id=business.pk, hour=hour, metric="sent", count=1)


def test_a_database_never_refreshed_is_left_alone(transactional_db):
    migrate(BEFORE_LOCATIONS)
    migrate_to_latest()
    assert not ActivityRollupState.objects.exists()


@pytest.mark.postgres
def test_the_unique_keys_include_the_location_on_postgresql(transactional_db):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename IN "
            "('reviews_activityrollup', 'reviews_activitydailyrollup')"
        )
        indexes = dict(cursor.fetchall())
    assert {
        "reviews_rollup_hour_location_unique",
        "reviews_rollup_day_location_unique",
        "reviews_rollup_location_hour",
        "reviews_rollup_location_day",
    } <= set(indexes)
    assert not {"reviews_rollup_hour_unique", "reviews_rollup_day_unique"} & set(indexes)
    for name in ("reviews_rollup_hour_location_unique", "reviews_rollup_day_location_unique"):
        assert (
            "COALESCE(location_id, '00000000-0000-0000-0000-000000000000'::uuid)" in (indexes[name])
        )


BEFORE_ACCOUNT_SUMS = [("activity", "0002_rollup_locations")]


def test_the_account_sums_are_filled_from_the_rollup_and_dropped_going_back(
    transactional_db, business
):
    """0003 on a database whose rollup holds rows per location: the account's hours and days
    are those a rebuild writes; back, the tables are gone and nothing else changed."""
    now = timezone.now()
    pier = LocationFactory(account=business, name="Pier")
    ReviewSiteFactory(owner=business, location=pier, url="https://g.page/r/pier/review")
    for n, (place, days) in enumerate([(None, 40), (None, 3), (pier, 3), (pier, 3), (pier, 1)]):
        request = add_at(
            business, place, created_at=now - timedelta(days=days), email=f"a{n}@example.com"
        )
        send_first(request, at=now - timedelta(days=days, minutes=-5))
    activity_rollup_rebuild(now=now)
    hours = ("owner_id", "hour", "metric", "channel", "detail", "count")
    days = ("owner_id", "day", "metric", "channel", "detail", "count")
    rebuilt = (
        set(ActivityAccountRollup.objects.values_list(*hours)),
        set(ActivityAccountDailyRollup.objects.values_list(*days)),
    )
    assert (business.pk, hour_start(now - timedelta(days=3)), "scheduled", "", "", 3) in rebuilt[0]
    per_location = set(ActivityRollup.objects.values_list("location_id", *hours))
    try:
        migrate(BEFORE_ACCOUNT_SUMS)
        tables = connection.introspection.table_names()
        assert ActivityAccountRollup._meta.db_table not in tables
        assert ActivityAccountDailyRollup._meta.db_table not in tables
    finally:
        migrate_to_latest()
    assert set(ActivityRollup.objects.values_list("location_id", *hours)) == per_location
    assert (
        set(ActivityAccountRollup.objects.values_list(*hours)),
        set(ActivityAccountDailyRollup.objects.values_list(*days)),
    ) == rebuilt
