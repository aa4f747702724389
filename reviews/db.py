"""The hand-written statements of the reviews app: the few that pay for themselves.

Everything else goes through the ORM. Each function here says what it replaces, what it gained
when measured side by side with that ORM code (``make bench BENCH_ARGS="--against <ref>"``;
docs/benchmarks.md, "Optimisations kept"), and the guarantee it relies on. Behaviour is the
same on SQLite and PostgreSQL, and tested on both; a function branches where SQLite lacks the
feature.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from django.db import connection, models

from accounts.models import User

from .models import Contact, Message, ReviewRequest


def contact_add_lock(*, owner: User, email_normalized: str, phone: str) -> None:
    """Serialise adds of one person: call first in ``contact_add``'s transaction, then match.

    PostgreSQL: a transaction-scoped advisory lock per key (the normalised e-mail, the E.164
    phone), sorted so two transactions wanting the same pair cannot deadlock, each in a
    statement of its own, held until commit or rollback. The match must be a separate,
    later statement: under READ COMMITTED a statement reads a snapshot taken when it starts,
    so a match in the lock's own statement would not see a contact committed while it waited.
    A 64-bit hash collision only makes two unrelated adds wait for each other.

    Replaces: nothing in the ORM (``select_for_update`` can only lock rows that exist, and a
    new person has none). Without it, concurrent adds of one new person both insert, and one
    fails on the unique constraints and runs again: correct, but a retry per race, and a
    contact matched by e-mail and another by phone could both get a request.

    SQLite: nothing to do; its transactions start with ``BEGIN IMMEDIATE`` (settings), so
    writers already run one at a time.
    """
    if connection.vendor != "postgresql":
        return
    keys = []
    if email_normalized:
        keys.append(_lock_key(owner.pk, "email", email_normalized))
    if phone:
        keys.append(_lock_key(owner.pk, "phone", phone))
    with connection.cursor() as cursor:
        for key in sorted(keys):
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])


def _lock_key(owner_id: object, kind: str, value: str) -> int:
    name = f"contact:{owner_id}:{kind}:{value}"
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def review_request_insert(
    *, contact: Contact | None, request: ReviewRequest, messages: Sequence[Message]
) -> None:
    """Insert a new request's rows (the new contact, if any, the request, its messages): the
    unsaved instances, which must have their primary keys (every one of these models takes a
    ``uuid4`` from Python, so no row waits for another's id).

    PostgreSQL: one statement, a chain of data-modifying CTEs (foreign keys are checked at the
    end of the statement, so the request may reference a contact inserted beside it).
    Replaces ``save()`` / ``bulk_create()`` model by model: three INSERTs, three round trips.
    Relies on: every value converted by its field, as ``save()`` does (``pre_save`` then
    ``get_db_prep_save``: ``auto_now_add`` included); no model signal is sent, and none is
    connected to these models (``contact_add`` is their only creator of this kind).

    SQLite (no data-modifying CTEs): ``bulk_create`` model by model.
    """
    groups = [[contact] if contact is not None else [], [request], list(messages)]
    groups = [rows for rows in groups if rows]
    if connection.vendor != "postgresql":
        for rows in groups:
            type(rows[0]).objects.bulk_create(rows)
        return
    statements, params = [], []
    for rows in groups:
        fields = type(rows[0])._meta.concrete_fields
        values = []
        for obj in rows:
            values.append(f"({', '.join(['%s'] * len(fields))})")
            params += [_db_value(field, obj) for field in fields]
        table = connection.ops.quote_name(type(rows[0])._meta.db_table)
        columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
        statements.append(f"INSERT INTO {table} ({columns}) VALUES {', '.join(values)}")
    *first, last = statements
    ctes = ", ".join(f"insert_{n} AS ({sql})" for n, sql in enumerate(first))
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {ctes} {last}" if ctes else last, params)
    for rows in groups:
        for obj in rows:
            obj._state.adding = False
            obj._state.db = connection.alias


def _db_value(field: models.Field, obj: models.Model) -> object:
    return field.get_db_prep_save(field.pre_save(obj, True), connection)
