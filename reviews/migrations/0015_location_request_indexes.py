"""The review requests' index and constraint for locations, built without blocking writes:

* ``reviews_request_location_list`` (location, owner, -created_at, -id): a location's requests,
  newest first (the NULL location, the default's, included);
* ``reviews_request_one_active_per_contact_location`` replaces
  ``reviews_request_one_active_per_contact``: one active request per contact *and location*
  (a NULL location compared as ``NO_LOCATION``). The new one is built before the old is dropped,
  so no moment is without one.

``CONCURRENTLY`` on PostgreSQL (the migration is not atomic; ``core.migration_operations``).
"""

import django.db.models.functions.comparison
import uuid
from django.db import migrations, models

from core.migration_operations import AddConstraintOnline, AddIndexOnline, RemoveConstraintOnline


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("reviews", "0014_locations"),
    ]

    operations = [
        AddIndexOnline(
            model_name="reviewrequest",
            index=models.Index(
                fields=["location", "owner", "-created_at", "-id"],
                name="reviews_request_location_list",
            ),
        ),
        AddConstraintOnline(
            model_name="reviewrequest",
            constraint=models.UniqueConstraint(
                models.F("contact"),
                django.db.models.functions.comparison.Coalesce(
                    models.F("location"),
                    models.Value(uuid.UUID("00000000-0000-0000-0000-000000000000")),
                    output_field=models.UUIDField(),
                ),
                condition=models.Q(("status__in", ["scheduled", "sending", "sent", "delivered"])),
                name="reviews_request_one_active_per_contact_location",
            ),
        ),
        RemoveConstraintOnline(
            model_name="reviewrequest",
            name="reviews_request_one_active_per_contact",
        ),
    ]
