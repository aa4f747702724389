"""The indexes the owner portal's and the admin's list pages need at a million requests.

* ``reviews_request_owner_keyset`` (owner, created_at, id) serves the portal's keyset pages
  (newest first, ``created_at`` ties broken by id); it replaces ``reviews_request_owner_recent``
  (owner, created_at), a prefix of it. ``reviews_request_owner_status`` serves the same pages
  filtered by status.
* ``reviews_request_recent``, ``reviews_message_recent``, ``reviews_contact_created``
  (created_at, id): the admin's changelists, newest first across every business.
* ``reviews_message_provider_ref`` leads with the provider's message id (staff search for it
  without knowing the provider); it replaces ``reviews_message_provider_id`` (provider, id),
  which served only the status callbacks, which this one serves too.
* PostgreSQL only: the ``pg_trgm`` extension and ``reviews_contact_search_trgm``, one GIN
  trigram index over the contact's names (upper-cased, as ``icontains`` compares), normalised
  e-mail and phone. It serves "contains" searches (``LIKE '%...%'``) and equality on those
  columns, from every business at once (the admin) or one (the portal). It is not part of the
  model state: SQLite has no such index, and searches there scan (small databases).

On PostgreSQL every index is built and dropped ``CONCURRENTLY`` (``core.migration_operations``;
the migration is not atomic).
"""

from django.conf import settings
from django.db import migrations, models

from core.migration_operations import AddIndexOnline, RemoveIndexOnline

TRIGRAM_INDEX = "reviews_contact_search_trgm"
TRIGRAM_COLUMNS = (
    "UPPER(first_name)",
    "UPPER(last_name)",
    "UPPER(company_name)",
    "email_normalized",
    "phone",
)


def _is_postgresql(schema_editor) -> bool:
    return schema_editor.connection.vendor == "postgresql"


def add_trigram_index(apps, schema_editor):
    if _is_postgresql(schema_editor):
        # pg_trgm is a trusted extension (PostgreSQL 13+): the database's owner may create it.
        schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        columns = ", ".join(f"{column} gin_trgm_ops" for column in TRIGRAM_COLUMNS)
        schema_editor.execute(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {TRIGRAM_INDEX} "
            f"ON reviews_contact USING gin ({columns})"
        )


def drop_trigram_index(apps, schema_editor):
    # The extension stays: other objects of the database may use it by then.
    if _is_postgresql(schema_editor):
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {TRIGRAM_INDEX}")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("reviews", "0005_email_key_idna"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # Each new index first, then the one it replaces: no moment without either.
        AddIndexOnline(
            model_name="reviewrequest",
            index=models.Index(
                fields=["owner", "-created_at", "-id"], name="reviews_request_owner_keyset"
            ),
        ),
        RemoveIndexOnline(model_name="reviewrequest", name="reviews_request_owner_recent"),
        AddIndexOnline(
            model_name="reviewrequest",
            index=models.Index(
                fields=["owner", "status", "-created_at", "-id"],
                name="reviews_request_owner_status",
            ),
        ),
        AddIndexOnline(
            model_name="reviewrequest",
            index=models.Index(fields=["-created_at", "-id"], name="reviews_request_recent"),
        ),
        AddIndexOnline(
            model_name="message",
            index=models.Index(
                condition=~models.Q(provider_message_id=""),
                fields=["provider_message_id", "provider"],
                name="reviews_message_provider_ref",
            ),
        ),
        RemoveIndexOnline(model_name="message", name="reviews_message_provider_id"),
        AddIndexOnline(
            model_name="message",
            index=models.Index(fields=["-created_at", "-id"], name="reviews_message_recent"),
        ),
        AddIndexOnline(
            model_name="contact",
            index=models.Index(fields=["-created_at", "-id"], name="reviews_contact_created"),
        ),
        migrations.RunPython(add_trigram_index, drop_trigram_index, elidable=False),
    ]
