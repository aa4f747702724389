# The dashboards' rollup moved here from reviews with its tables: this takes the three models
# over in Django's state only, on the tables, constraints and indexes that reviews' migrations
# 0009 and 0012 made (the same db_table and names). Nothing in the database changes and no row
# is copied; reviews' migration 0013 drops the models from reviews' state.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        # The last migration of reviews that changed these models (it made the daily table).
        ("reviews", "0012_activity_daily_rollup"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ActivityRollupState",
                    fields=[
                        ("key", models.CharField(max_length=20, primary_key=True, serialize=False)),
                        ("covered_from", models.DateTimeField(blank=True, null=True)),
                        ("closed_until", models.DateTimeField()),
                        ("refreshed_at", models.DateTimeField()),
                    ],
                    options={"db_table": "reviews_activityrollupstate"},
                ),
                migrations.CreateModel(
                    name="ActivityDailyRollup",
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
                                blank=True,
                                choices=[("sms", "SMS"), ("email", "e-mail")],
                                max_length=10,
                            ),
                        ),
                        (
                            "detail",
                            models.CharField(
                                blank=True, help_text="Error code or source.", max_length=64
                            ),
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
                        "db_table": "reviews_activitydailyrollup",
                        "indexes": [models.Index(fields=["day"], name="reviews_rollup_day")],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("owner", "day", "metric", "channel", "detail"),
                                name="reviews_rollup_day_unique",
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="ActivityRollup",
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
                                blank=True,
                                choices=[("sms", "SMS"), ("email", "e-mail")],
                                max_length=10,
                            ),
                        ),
                        (
                            "detail",
                            models.CharField(
                                blank=True, help_text="Error code or source.", max_length=64
                            ),
                        ),
                        ("count", models.PositiveIntegerField()),
                        (
                            "hour",
                            models.DateTimeField(help_text="The start of the UTC hour counted."),
                        ),
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
                        "db_table": "reviews_activityrollup",
                        "indexes": [
                            models.Index(fields=["owner", "hour"], name="reviews_rollup_owner_hour")
                        ],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("hour", "owner", "metric", "channel", "detail"),
                                name="reviews_rollup_hour_unique",
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
