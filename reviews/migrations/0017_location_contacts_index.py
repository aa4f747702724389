"""``reviews_request_loc_contacts`` (location, owner, contact): a location's distinct
contacts read in order from the index alone, so that the admin's contact list filtered by
location counts them up to its cap whatever the location's size (without it: every request of
the location read from the table and hashed). Built without blocking writes (``CONCURRENTLY``
on PostgreSQL; the migration is not atomic; ``core.migration_operations``)."""

from django.db import migrations, models

from core.migration_operations import AddIndexOnline


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("reviews", "0016_locations_for_existing_businesses"),
    ]

    operations = [
        AddIndexOnline(
            model_name="reviewrequest",
            index=models.Index(
                fields=["location", "owner", "contact"], name="reviews_request_loc_contacts"
            ),
        ),
    ]
