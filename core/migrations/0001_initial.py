# The rate limiter's database counters moved here from connector_api with their table: this
# takes the model over in Django's state only; the table (connector_api_ratelimitcounter, made
# by connector_api's migration 0002) and its rows stay as they are.

from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("connector_api", "0002_rate_limit_counters"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="RateLimitCounter",
                    fields=[
                        (
                            "key",
                            models.CharField(max_length=200, primary_key=True, serialize=False),
                        ),
                        ("count", models.PositiveIntegerField()),
                        (
                            "reset_at",
                            models.BigIntegerField(
                                db_index=True,
                                help_text="Unix epoch seconds at which this window ends.",
                            ),
                        ),
                    ],
                    options={"db_table": "connector_api_ratelimitcounter"},
                ),
            ],
            database_operations=[],
        ),
    ]
