# The dashboards' rollup (ActivityRollup, ActivityDailyRollup, ActivityRollupState) now belongs to
# the activity app (its migration 0001, same tables): drop the models from this app's state
# only. The tables and their rows are activity's from here on. No dependency on activity's
# migration: both change Django's state alone, so their order does not matter, and this app's
# migrations stay loadable without the app above it.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("reviews", "0012_activity_daily_rollup"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="ActivityRollupState"),
                migrations.DeleteModel(name="ActivityDailyRollup"),
                migrations.DeleteModel(name="ActivityRollup"),
            ],
            database_operations=[],
        ),
    ]
