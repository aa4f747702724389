"""Connector API state: the Idempotency-Key store."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, models, transaction
from django.utils import timezone

from accounts.models import User
from core.db import columns, execute_prepared, sql_text, table

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

# {columns}: those of _CLAIM_FIELDS, {values} a %s for each. ("key" quoted: an SQLite keyword.)
_KEY_CLAIM = """
INSERT INTO {idempotency_key} ({columns})
VALUES ({values})
ON CONFLICT (owner_id, "key") DO NOTHING
RETURNING id
"""

_KEY_COMPLETE = """
UPDATE {idempotency_key}
SET state = %s, response_status = %s, response_body = %s, completed_at = %s
WHERE id = %s AND state = %s AND locked_at = %s
"""


@functools.cache
def _claim_fields(model: type[models.Model]) -> list[models.Field[Any, Any]]:
    concrete = {field.name: field for field in model._meta.concrete_fields}
    return [concrete[name] for name in _CLAIM_FIELDS]


@functools.cache
def _key_claim_sql(model: type[models.Model]) -> str:
    claimed = _claim_fields(model)
    return sql_text(
        _KEY_CLAIM,
        idempotency_key=table(model),
        columns=columns(claimed),
        values=", ".join(["%s"] * len(claimed)),
    )


@functools.cache
def _key_complete_sql(model: type[models.Model]) -> str:
    return sql_text(_KEY_COMPLETE, idempotency_key=table(model))


class IdempotencyKeyManager(models.Manager["IdempotencyKey"]):
    def claim(
        self, *, owner: User, key: str, endpoint: str, fingerprint: str, now: datetime
    ) -> IdempotencyKey | None:
        """Insert the claim (``in_progress``) for (owner, key); ``None`` when that key exists.

        One statement, ``INSERT ... ON CONFLICT (owner_id, key) DO NOTHING RETURNING id``
        (PostgreSQL and SQLite alike), prepared once per database session
        (``core.db.execute_prepared``) and committed by itself outside a transaction so a
        concurrent request with the same key sees it at once; inside a caller's transaction
        (a test's) it is a plain statement of that transaction.

        Replaces ``claim_orm``, ``transaction.atomic()`` around ``create()`` catching
        ``IntegrityError``: ``BEGIN``, the insert and ``COMMIT`` (or ``ROLLBACK``), three round
        trips on every API write with a key (docs/benchmarks.md, Optimisations kept). Relies on
        the unique (owner, key) constraint, which is what makes a concurrent claim of the same
        key lose.
        """
        row = self._claim_row(
            owner=owner, key=key, endpoint=endpoint, fingerprint=fingerprint, now=now
        )
        params = [
            field.get_db_prep_save(getattr(row, field.attname), connection)
            for field in _claim_fields(self.model)
        ]
        with connection.cursor() as cursor:
            execute_prepared(
                cursor, _key_claim_sql(self.model), params, name="connector_api_key_claim"
            )
            inserted = cursor.fetchone()
        if inserted is None:
            return None
        row.pk = inserted[0]
        row._state.adding = False
        return row

    def claim_orm(
        self, *, owner: User, key: str, endpoint: str, fingerprint: str, now: datetime
    ) -> IdempotencyKey | None:
        """``claim`` through the ORM: the code it replaced, kept beside it as its twin (not used;
        tests/connector_api/test_idempotency.py runs both on the same rows)."""
        row = self._claim_row(
            owner=owner, key=key, endpoint=endpoint, fingerprint=fingerprint, now=now
        )
        try:
            with transaction.atomic():
                row.save(force_insert=True)
        except IntegrityError:
            return None
        return row

    def _claim_row(
        self, *, owner: User, key: str, endpoint: str, fingerprint: str, now: datetime
    ) -> IdempotencyKey:
        return self.model(
            owner=owner,
            key=key,
            endpoint=endpoint,
            fingerprint=fingerprint,
            state=self.model.State.IN_PROGRESS,
            created_at=now,
            locked_at=now,
        )

    def complete(self, *, row: IdempotencyKey, status: int, body: str, now: datetime) -> None:
        """Store the response of the claim ``row`` (``done``); nothing if the claim was taken
        over meanwhile (its ``locked_at`` moved on: the new holder stores its own).

        One prepared statement (``core.db.execute_prepared``), in the transaction of the work,
        so the response commits with it. Replaces ``complete_orm``, ``filter(pk=...,
        state=IN_PROGRESS, locked_at=...).update(...)``, which the ORM compiled and PostgreSQL
        planned on every API write with a key (docs/benchmarks.md, Optimisations kept). Relies
        on the same guard as that update: the row's state and ``locked_at`` as the claim left
        them.
        """
        stamp = self.model._meta.get_field("locked_at")  # completed_at's type too
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
            execute_prepared(
                cursor, _key_complete_sql(self.model), params, name="connector_api_key_complete"
            )

    def complete_orm(self, *, row: IdempotencyKey, status: int, body: str, now: datetime) -> None:
        """``complete`` through the ORM: the code it replaced, kept beside it as its twin (not
        used; tests/connector_api/test_idempotency.py runs both on the same rows)."""
        self.filter(pk=row.pk, state=self.model.State.IN_PROGRESS, locked_at=row.locked_at).update(
            state=self.model.State.DONE,
            response_status=status,
            response_body=body,
            completed_at=now,
        )


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
