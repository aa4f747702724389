"""PostgreSQL statistics of the review requests' owner and location together (``CREATE
STATISTICS ... (mcv)``), so that the planner knows how many of an account's requests have no
location (the default location's, from before locations) instead of multiplying the share of
rows with no location in the whole table by the account's share. Without them, an account whose
requests are mostly placed, beside other accounts' unplaced ones, had its default location's
count planned as a sequential read of the table, expecting the count's cap of rows soon
(``reviews.admin``'s location filter). ``ANALYZE`` (autovacuum's, or the next manual one) fills
them; nothing is written on insert. Other databases: nothing to do."""

from django.db import migrations

STATISTICS = "reviews_request_owner_location"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE STATISTICS IF NOT EXISTS {STATISTICS} (mcv) "
            "ON owner_id, location_id FROM reviews_reviewrequest"
        )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP STATISTICS IF EXISTS {STATISTICS}")


class Migration(migrations.Migration):
    dependencies = [
        ("reviews", "0017_location_contacts_index"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
