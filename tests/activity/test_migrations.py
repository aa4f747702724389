"""The rollup's move from reviews to activity: Django's state only, nothing in the database."""

from __future__ import annotations

import pytest
from django.db import migrations
from django.db.migrations.loader import MigrationLoader

from activity.models import ActivityDailyRollup, ActivityRollup, ActivityRollupState


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
