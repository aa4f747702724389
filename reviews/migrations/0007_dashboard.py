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
``created_at`` index). On PostgreSQL the indexes are built ``CONCURRENTLY`` (the migration is
not atomic), so a deploy on a big database does not block writes while they build; a build
that fails leaves an INVALID index behind: drop it and run ``migrate`` again.
"""

from django.conf import settings
from django.db import migrations, models


class AddIndexOnline(migrations.AddIndex):
    """``AddIndex``, built ``CONCURRENTLY`` on PostgreSQL."""

    def _run(self, schema_editor, method, model):
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return
        if schema_editor.connection.vendor == "postgresql":
            method(model, self.index, concurrently=True)
        else:
            method(model, self.index)

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        model = to_state.apps.get_model(app_label, self.model_name)
        self._run(schema_editor, schema_editor.add_index, model)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        model = from_state.apps.get_model(app_label, self.model_name)
        self._run(schema_editor, schema_editor.remove_index, model)


class Migration(migrations.Migration):
    atomic = False
    dependencies = [
        ("reviews", "0004_covered_foreign_key_indexes"),
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
