"""The rollup counts each location apart (issue 37): a ``location`` column on both levels (NULL:
the account's default location, as on the requests), in their unique keys (a NULL compared as
``NO_LOCATION``) and, where set, in an index of its own.

Derived tables, possibly large: the columns are nullable with no default (no rewrite), the new
unique indexes are built before the old constraints are dropped and, like the location indexes,
without blocking writes (``CONCURRENTLY`` on PostgreSQL; the migration is not atomic).

The hours rolled up before this counted every location under NULL: the last step marks them to
re-derive (``ActivityRollupState.backfill_to``) and takes them out of what the readers use
(``covered_from``), so the dashboards read the base tables for them until the refreshes have
re-derived them, a month of hours each (``activity.services``); nothing to run by hand. Back:
the rollup is emptied (the previous release counts per owner only); its refreshes start again
from their last hours, and ``rebuild_activity_rollup`` backfills.
"""

import uuid

import django.db.models.deletion
import django.db.models.functions.comparison
from django.apps.registry import Apps
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.models import Min

from core.migration_operations import AddConstraintOnline, AddIndexOnline

ROLLUP_KEY = "activity"


def mark_for_rederive(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """Mark the hours rolled up so far (without their locations) for the refreshes to
    re-derive, and take them out of the hours the readers use."""
    State = apps.get_model("activity", "ActivityRollupState")
    Rollup = apps.get_model("activity", "ActivityRollup")
    state = State.objects.select_for_update().filter(key=ROLLUP_KEY).first()
    if state is None:
        return  # never refreshed: nothing rolled up
    first = state.covered_from
    if first is None:
        first = Rollup.objects.aggregate(first=Min("hour"))["first"]
    if first is None or first >= state.closed_until:
        return  # no hour rolled up
    state.backfill_to = first
    state.covered_from = state.closed_until
    state.save(update_fields=["backfill_to", "covered_from"])
    print(
        f"\n  Activity rollup: the hours from {first:%Y-%m-%d %H:00} to "
        f"{state.closed_until:%Y-%m-%d %H:00} UTC are re-derived by location by the next "
        "refreshes."
    )


def forget_rollup(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """Back: empty the rollup (rows of several locations would break the per-owner keys)."""
    for name in ("ActivityRollup", "ActivityDailyRollup", "ActivityRollupState"):
        apps.get_model("activity", name).objects.all().delete()


def no_location_key() -> django.db.models.functions.comparison.Coalesce:
    return django.db.models.functions.comparison.Coalesce(
        models.F("location"),
        models.Value(uuid.UUID("00000000-0000-0000-0000-000000000000")),
        output_field=models.UUIDField(),
    )


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("accounts", "0002_teams_and_locations"),
        ("activity", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="activityrollup",
            name="location",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="accounts.location",
            ),
        ),
        migrations.AddField(
            model_name="activitydailyrollup",
            name="location",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="accounts.location",
            ),
        ),
        migrations.AddField(
            model_name="activityrollupstate",
            name="backfill_to",
            field=models.DateTimeField(blank=True, null=True),
        ),
        AddConstraintOnline(
            model_name="activityrollup",
            constraint=models.UniqueConstraint(
                models.F("hour"),
                models.F("owner"),
                models.F("metric"),
                models.F("channel"),
                models.F("detail"),
                no_location_key(),
                name="reviews_rollup_hour_location_unique",
            ),
        ),
        migrations.RemoveConstraint(
            model_name="activityrollup",
            name="reviews_rollup_hour_unique",
        ),
        AddIndexOnline(
            model_name="activityrollup",
            index=models.Index(
                condition=models.Q(("location__isnull", False)),
                fields=["location", "hour"],
                name="reviews_rollup_location_hour",
            ),
        ),
        AddConstraintOnline(
            model_name="activitydailyrollup",
            constraint=models.UniqueConstraint(
                models.F("owner"),
                models.F("day"),
                models.F("metric"),
                models.F("channel"),
                models.F("detail"),
                no_location_key(),
                name="reviews_rollup_day_location_unique",
            ),
        ),
        migrations.RemoveConstraint(
            model_name="activitydailyrollup",
            name="reviews_rollup_day_unique",
        ),
        AddIndexOnline(
            model_name="activitydailyrollup",
            index=models.Index(
                condition=models.Q(("location__isnull", False)),
                fields=["location", "day"],
                name="reviews_rollup_location_day",
            ),
        ),
        migrations.RunPython(mark_for_rederive, forget_rollup, atomic=True),
    ]
