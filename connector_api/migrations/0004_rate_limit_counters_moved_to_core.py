# RateLimitCounter now belongs to core (core's migration 0001, same table): drop it from this
# app's state only. The table and its rows are core's from here on.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("connector_api", "0003_idempotency_owner_index_covered_by_unique"),
        ("core", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="RateLimitCounter")],
            database_operations=[],
        ),
    ]
