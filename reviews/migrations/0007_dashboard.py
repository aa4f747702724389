"""The indexes behind the dashboards: each series reads a range of one timestamp.

* ``reviews_request_{sent,delivered,clicked,failed}_day``: the staff dashboard's series per
  day (``reviews.selectors.review_request_daily_counts``), for every business or one, read
  from the index alone (the owner is the second column; the sent one also carries
  ``clicked_at`` for the click-through rate). Partial on the timestamp being set, so a new
  request adds nothing to them; a request enters each one when it first reaches that status.
* ``reviews_message_failed_day``: the failure reasons of a period, grouped by code
  (``reviews.selectors.message_failure_reasons``), without reading the table's rows.

The "scheduled" series reads ranges of the requests' ``created_at`` through the indexes that
lead with it (one owner's: ``(owner, created_at)``; everyone's: the admin list's
``created_at`` index). On PostgreSQL the indexes are built ``CONCURRENTLY`` (``core.migration_operations``; the
migration is not atomic).
"""

from django.conf import settings
from django.db import migrations, models

from core.migration_operations import AddIndexOnline


class Migration(migrations.Migration):
    atomic = False
    dependencies = [
        ("reviews", "0006_scale_indexes"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        AddIndexOnline(
            model_name="message",
            index=models.Index(
                condition=models.Q(("failed_at__isnull", False)),
                fields=["failed_at", "last_error_code", "review_request"],
                name="reviews_message_failed_day",
            ),
        ),
        AddIndexOnline(
            model_name="reviewrequest",
            index=models.Index(
                condition=models.Q(("sent_at__isnull", False)),
                fields=["sent_at", "owner", "clicked_at"],
                name="reviews_request_sent_day",
            ),
        ),
        AddIndexOnline(
            model_name="reviewrequest",
            index=models.Index(
                condition=models.Q(("delivered_at__isnull", False)),
                fields=["delivered_at", "owner"],
                name="reviews_request_delivered_day",
            ),
        ),
        AddIndexOnline(
            model_name="reviewrequest",
            index=models.Index(
                condition=models.Q(("clicked_at__isnull", False)),
                fields=["clicked_at", "owner"],
                name="reviews_request_clicked_day",
            ),
        ),
        AddIndexOnline(
            model_name="reviewrequest",
            index=models.Index(
                condition=models.Q(("failed_at__isnull", False)),
                fields=["failed_at", "owner"],
                name="reviews_request_failed_day",
            ),
        ),
    ]
