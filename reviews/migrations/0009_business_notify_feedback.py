"""An owner may turn off the e-mail about private feedback (``BusinessSettings.notify_feedback``,
on for every business, existing ones included). A small table: a plain column add."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("reviews", "0008_feedback_notice"),
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
    ]
