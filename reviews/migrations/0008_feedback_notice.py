"""Private feedback's e-mail to the owner, and the dashboards' "opted out" series.

* ``Feedback.notified_at``: when the owner was told (``reviews.services.feedback_notify_owner``),
  so a notification task run twice sends one e-mail. Feedback stored before this migration is
  never notified (nothing queues it).
* ``BusinessSettings.notify_feedback``: an owner may turn that e-mail off (on for every
  business, existing ones included).
* ``reviews_request_opted_out_day``: the "opted out" series per day
  (``reviews.selectors.review_request_daily_counts``), like the other ``*_day`` indexes of
  0007, built ``CONCURRENTLY`` on PostgreSQL (the migration is not atomic).
"""

from django.conf import settings
from django.db import migrations, models

from core.migration_operations import AddIndexOnline


class Migration(migrations.Migration):
    atomic = False
    dependencies = [
        ("reviews", "0007_dashboard"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="businesssettings",
            name="notify_feedback",
            field=models.BooleanField(
                default=True,
                help_text="E-mail the owner when a contact leaves private feedback.",
            ),
        ),
        migrations.AddField(
            model_name="feedback",
            name="notified_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        AddIndexOnline(
            model_name="reviewrequest",
            index=models.Index(
                condition=models.Q(("opted_out_at__isnull", False)),
                fields=["opted_out_at", "owner"],
                name="reviews_request_opted_out_day",
            ),
        ),
    ]
