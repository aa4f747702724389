"""The rollup summed over each account's locations (issue 37): ``ActivityAccountRollup`` (per
UTC hour) and ``ActivityAccountDailyRollup`` (per UTC day), which the whole account's reads
take instead of a row per location.

New tables, so nothing existing is rewritten or locked for long: the migration is not atomic
(each table is created in a statement of its own, its foreign key to the users checked against
an empty table), then one transaction fills them from the hours ``ActivityRollup`` holds,
holding the state row's lock as a refresh does (a refresh running meanwhile waits for it; the
tables hold exactly the hours the rollup holds, whatever ``covered_from`` says), and ANALYZE
gives the planner their statistics at once. Back: the tables are dropped; nothing else
changed.
"""

from collections.abc import Iterable, Iterator
from datetime import UTC
from itertools import islice
from typing import Any

import django.db.models.deletion
from django.apps.registry import Apps
from django.conf import settings
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.models import Sum
from django.db.models.functions import TruncDate

ROLLUP_KEY = "activity"
BATCH = 5000


def _batches(rows: Iterable[Any]) -> Iterator[list[Any]]:
    iterator = iter(rows)
    while batch := list(islice(iterator, BATCH)):
        yield batch


def fill(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """The account's sums of every hour and day the rollup holds."""
    State = apps.get_model("activity", "ActivityRollupState")
    Hourly = apps.get_model("activity", "ActivityRollup")
    AccountHourly = apps.get_model("activity", "ActivityAccountRollup")
    AccountDaily = apps.get_model("activity", "ActivityAccountDailyRollup")
    State.objects.select_for_update().filter(key=ROLLUP_KEY).first()
    key = ("owner_id", "metric", "channel", "detail")
    hours = (
        Hourly.objects.values(*key, "hour")
        .annotate(n=Sum("count"))
        .values_list(*key, "hour", "n")
        .order_by()
    )
    for batch in _batches(hours.iterator(chunk_size=BATCH)):
        AccountHourly.objects.bulk_create(
            AccountHourly(owner_id=o, metric=m, channel=c, detail=d, hour=at, count=n)
            for o, m, c, d, at, n in batch
        )
    days = (
        AccountHourly.objects.annotate(day=TruncDate("hour", tzinfo=UTC))
        .values(*key, "day")
        .annotate(n=Sum("count"))
        .values_list(*key, "day", "n")
        .order_by()
    )
    for batch in _batches(days.iterator(chunk_size=BATCH)):
        AccountDaily.objects.bulk_create(
            AccountDaily(owner_id=o, metric=m, channel=c, detail=d, day=day, count=n)
            for o, m, c, d, day, n in batch
        )


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("activity", "0002_rollup_locations"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ActivityAccountDailyRollup",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                (
                    "metric",
                    models.CharField(
                        choices=[
                            ("scheduled", "Requests scheduled"),
                            ("sent", "Requests sent"),
                            ("delivered", "Requests delivered (a receipt, or a click)"),
                            ("clicked", "Requests clicked"),
                            ("failed", "Requests failed"),
                            ("opted_out", "Requests opted out"),
                            ("message_failed", "Messages failed"),
                            ("opt_out", "Opt-outs"),
                        ],
                        max_length=20,
                    ),
                ),
                (
                    "channel",
                    models.CharField(
                        blank=True, choices=[("sms", "SMS"), ("email", "e-mail")], max_length=10
                    ),
                ),
                (
                    "detail",
                    models.CharField(blank=True, help_text="Error code or source.", max_length=64),
                ),
                ("count", models.PositiveIntegerField()),
                ("day", models.DateField(help_text="The UTC day counted.")),
                (
                    "owner",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["day"], name="activity_account_day")],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("owner", "day", "metric", "channel", "detail"),
                        name="activity_account_day_unique",
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="ActivityAccountRollup",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                (
                    "metric",
                    models.CharField(
                        choices=[
                            ("scheduled", "Requests scheduled"),
                            ("sent", "Requests sent"),
                            ("delivered", "Requests delivered (a receipt, or a click)"),
                            ("clicked", "Requests clicked"),
                            ("failed", "Requests failed"),
                            ("opted_out", "Requests opted out"),
                            ("message_failed", "Messages failed"),
                            ("opt_out", "Opt-outs"),
                        ],
                        max_length=20,
                    ),
                ),
                (
                    "channel",
                    models.CharField(
                        blank=True, choices=[("sms", "SMS"), ("email", "e-mail")], max_length=10
                    ),
                ),
                (
                    "detail",
                    models.CharField(blank=True, help_text="Error code or source.", max_length=64),
                ),
                ("count", models.PositiveIntegerField()),
                ("hour", models.DateTimeField(help_text="The start of the UTC hour counted.")),
                (
                    "owner",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["hour"], name="activity_account_hour")],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("owner", "hour", "metric", "channel", "detail"),
                        name="activity_account_hour_unique",
                    )
                ],
            },
        ),
        migrations.RunPython(fill, migrations.RunPython.noop, atomic=True),
        # The planner's statistics of the rows just written (autovacuum would take a while).
        migrations.RunSQL(
            "ANALYZE activity_activityaccountrollup", migrations.RunSQL.noop, elidable=True
        ),
        migrations.RunSQL(
            "ANALYZE activity_activityaccountdailyrollup", migrations.RunSQL.noop, elidable=True
        ),
    ]
