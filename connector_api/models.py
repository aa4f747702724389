"""Connector API state: the Idempotency-Key store."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import connection, models
from django.utils import timezone

from accounts.models import User
from core.db import execute_prepared

# The columns a claim inserts (``IdempotencyKeyManager.claim``).
_CLAIM_FIELDS = (
    "owner",
    "key",
    "endpoint",
    "fingerprint",
    "state",
    "response_body",
    "created_at",
    "locked_at",
)


class IdempotencyKeyManager(models.Manager["IdempotencyKey"]):
    def claim(
        self, *, owner: User, key: str, endpoint: str, fingerprint: str, now: datetime
    ) -> IdempotencyKey | None:
        """Insert the claim (``in_progress``) for (owner, key); ``None`` when that key exists.

        One statement, ``INSERT ... ON CONFLICT (owner_id, key) DO NOTHING RETURNING id``
        (PostgreSQL and SQLite alike), committed by itself outside a transaction so a
        concurrent request with the same key sees it at once; inside a caller's transaction
        (a test's) it is a plain statement of that transaction.

        Replaces ``transaction.atomic()`` around ``create()`` catching ``IntegrityError``:
        ``BEGIN``, the insert and ``COMMIT`` (or ``ROLLBACK``), three round trips on every API
        write with a key. Relies on the unique (owner, key) constraint, which is what makes a
        concurrent claim of the same key lose.
        """
        row = self.model(
            owner=owner,
            key=key,
            endpoint=endpoint,
            fingerprint=fingerprint,
            state=self.model.State.IN_PROGRESS,
            created_at=now,
            locked_at=now,
        )
        concrete = {field.name: field for field in self.model._meta.concrete_fields}
        fields = [concrete[name] for name in _CLAIM_FIELDS]
        qn = connection.ops.quote_name
        # Every concrete field has a column (``column`` is None only on fields without one).
        columns = [qn(field.column) for field in fields if field.column is not None]
        sql = (
            f"INSERT INTO {qn(self.model._meta.db_table)} "
            f"({', '.join(columns)}) "
            f"VALUES ({', '.join(['%s'] * len(fields))}) "
            f"ON CONFLICT ({qn('owner_id')}, {qn('key')}) DO NOTHING RETURNING {qn('id')}"
        )
        params = [
            field.get_db_prep_save(getattr(row, field.attname), connection) for field in fields
        ]
        with connection.cursor() as cursor:
            execute_prepared(cursor, sql, params, name="connector_api_key_claim")
            inserted = cursor.fetchone()
        if inserted is None:
            return None
        row.pk = inserted[0]
        row._state.adding = False
        return row

    def complete(self, *, row: IdempotencyKey, status: int, body: str, now: datetime) -> None:
        """Store the response of the claim ``row`` (``done``); nothing if the claim was taken
        over meanwhile (its ``locked_at`` moved on: the new holder stores its own).

        One prepared statement (``core.db.execute_prepared``), in the transaction of the work,
        so the response commits with it. Replaces ``filter(pk=..., state=IN_PROGRESS,
        locked_at=...).update(...)``, which the ORM compiled and PostgreSQL planned on every
        API write with a key (planning 0.09 of its 0.14 ms): L4 x1.06 fresh, x1.12 with 30 %
        duplicates, side by side (docs/benchmarks.md). Relies on the same guard as that
        update: the row's state and ``locked_at`` as the claim left them.
        """
        meta = self.model._meta
        qn = connection.ops.quote_name
        sql = (
            f"UPDATE {qn(meta.db_table)} SET {qn('state')} = %s, {qn('response_status')} = %s,"
            f" {qn('response_body')} = %s, {qn('completed_at')} = %s"
            f" WHERE {qn('id')} = %s AND {qn('state')} = %s AND {qn('locked_at')} = %s"
        )
        stamp = meta.get_field("locked_at")  # completed_at's type too
        params = [
            self.model.State.DONE,
            status,
            body,
            stamp.get_db_prep_value(now, connection),
            row.pk,
            self.model.State.IN_PROGRESS,
            stamp.get_db_prep_value(row.locked_at, connection),
        ]
        with connection.cursor() as cursor:
            execute_prepared(cursor, sql, params, name="connector_api_key_complete")


class IdempotencyKey(models.Model):
    """The first response to a request carrying ``Idempotency-Key``, per (user, key).

    Claimed (``in_progress``) in its own committed transaction before the work runs, so a
    concurrent duplicate sees the claim; completed (``done``, with the response) after. Kept for
    ``IDEMPOTENCY_KEY_TTL_HOURS``. See ``connector_api/idempotency.py``.
    """

    class State(models.TextChoices):
        IN_PROGRESS = "in_progress", "In progress"
        DONE = "done", "Done"

    # No index of its own: the unique (owner, key) constraint's index serves owner lookups, and
    # every API write inserts a row here (one index less to maintain per request).
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="idempotency_keys",
        db_index=False,
    )
    key = models.CharField(max_length=255)
    endpoint = models.CharField(max_length=100)
    fingerprint = models.CharField(
        max_length=64, help_text="sha256 of the endpoint and the canonical JSON body."
    )
    state = models.CharField(max_length=20, choices=State.choices, default=State.IN_PROGRESS)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    # JSON as text, not jsonb: jsonb reorders keys, and a replay should be the same bytes.
    response_body = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    locked_at = models.DateTimeField(
        default=timezone.now, help_text="When the running request claimed the key."
    )
    completed_at = models.DateTimeField(null=True, blank=True)

    objects = IdempotencyKeyManager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "key"], name="connector_idempotency_key_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.state})"
