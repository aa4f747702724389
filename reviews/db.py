"""The hand-written statements of the reviews app: the few that pay for themselves.

Everything else goes through the ORM. Each function here says what it replaces, what it gained
when measured side by side with that ORM code (``make bench BENCH_ARGS="--against <ref>"``;
docs/benchmarks.md, "Optimisations kept"), and the guarantee it relies on. Behaviour is the
same on SQLite and PostgreSQL, and tested on both; a function branches where SQLite lacks the
feature.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection, models, transaction

from accounts.models import User
from core.db import execute_prepared, prepared_sql

from .models import Channel, Contact, Message, ReviewRequest


def contact_add_lock(*, owner: User, email_normalized: str, phone: str) -> None:
    """Serialise adds of one person: call first in ``contact_add``'s transaction, then
    ``contacts_matching``.

    PostgreSQL: a transaction-scoped advisory lock per key (the normalised e-mail, the E.164
    phone), sorted so two transactions wanting the same pair cannot deadlock, each in a
    statement of its own, held until commit or rollback. The match must be a separate, later
    statement: under READ COMMITTED a statement reads a snapshot taken when it starts, so a
    match in the lock's own statement would not see a contact committed while it waited. A
    64-bit hash collision only makes two unrelated adds wait for each other.

    Replaces: nothing in the ORM (``select_for_update`` can only lock rows that exist, and a
    new person has none). Without it, concurrent adds of one new person both insert, and one
    fails on a unique constraint and runs again: correct, but a retry per race.

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
            execute_prepared(
                cursor,
                "SELECT pg_advisory_xact_lock(CAST(%s AS bigint))",
                [key],
                name="reviews_contact_add_lock",
            )


def contacts_matching(*, owner: User, email_normalized: str, phone: str) -> list[Contact]:
    """The owner's contacts with this e-mail key or this E.164 phone (at most two rows),
    locked (call inside a transaction), in primary-key order so that two transactions locking
    the same pair cannot deadlock.

    Written once (``Contact.objects.raw``) instead of the queryset the ORM compiles on every
    API write: ``Contact.objects.select_for_update().filter(Q(email_normalized=...) |
    Q(phone=...), owner=owner).order_by("pk")``; prepared once per database session
    (``core.db.prepared_sql``: planning, with the contact table's many partial indexes to
    weigh, was 0.21 of its 0.24 ms).
    """
    matches: list[str] = []
    params: list[Any] = [User._meta.pk.get_db_prep_value(owner.pk, connection)]
    # Each key's "<> ''" is its unique index's condition, said in the text so that the plan
    # of the prepared statement, made for any value, may still use that partial index.
    if email_normalized:
        matches.append("(email_normalized = %s AND email_normalized <> '')")
        params.append(email_normalized)
    if phone:
        matches.append("(phone = %s AND phone <> '')")
        params.append(phone)
    if not matches:
        return []
    table = connection.ops.quote_name(Contact._meta.db_table)
    sql = f"SELECT * FROM {table} WHERE owner_id = %s AND ({' OR '.join(matches)}) ORDER BY id"
    if connection.features.has_select_for_update:
        sql += " FOR UPDATE"
    return list(
        Contact.objects.raw(prepared_sql(sql, params, name="reviews_contacts_matching"), params)
    )


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
    end of the statement, so the request may reference a contact inserted beside it). Each
    model's rows travel as one parameter, a JSON array that ``jsonb_populate_recordset`` turns
    into rows of the table (each value read by its column type's own input function, as a
    text literal would be): the statement's text is the same for every request of one shape,
    short, and prepared once per database session (``core.db.prepared_sql``: its planning was
    0.11 of 0.64 ms), instead of a hundred placeholders split, quoted and planned on every
    request.

    Replaces ``bulk_create()`` model by model: three INSERTs, three round trips. Relies on:
    these models' field types (text, integers, UUIDs, datetimes, an interval, a JSON object)
    needing no conversion on PostgreSQL beyond what JSON and the column's input function do;
    no model signal is sent, and none is connected to these models (``contact_add`` is their
    only creator of this kind).

    SQLite (no data-modifying CTEs): ``bulk_create`` model by model.
    """
    groups: list[list[models.Model]] = [
        [contact] if contact is not None else [],
        [request],
        list(messages),
    ]
    groups = [rows for rows in groups if rows]
    if connection.vendor != "postgresql":
        for rows in groups:
            type(rows[0])._default_manager.bulk_create(rows)
        return
    params = [json.dumps([_row(obj) for obj in rows], default=_json_value) for rows in groups]
    with connection.cursor() as cursor:
        execute_prepared(
            cursor,
            _insert_sql(tuple(type(rows[0]) for rows in groups)),
            params,
            name="reviews_review_request_insert",
        )
    for rows in groups:
        for obj in rows:
            obj._state.adding = False
            obj._state.db = connection.alias


@functools.cache
def _insert_sql(models_in_order: tuple[type[models.Model], ...]) -> str:
    """``WITH insert_0 AS (INSERT ...), ... INSERT ...``: one ``%s`` (a JSON array) per model."""
    qn = connection.ops.quote_name
    inserts = []
    for model in models_in_order:
        table = qn(model._meta.db_table)
        columns = ", ".join(qn(_column(field)) for field in model._meta.concrete_fields)
        inserts.append(
            f"INSERT INTO {table} ({columns}) SELECT {columns} "
            f"FROM jsonb_populate_recordset(NULL::{table}, %s::jsonb)"
        )
    *first, last = inserts
    ctes = ", ".join(f"insert_{n} AS ({sql})" for n, sql in enumerate(first))
    return f"WITH {ctes} {last}" if ctes else last


def _row(obj: models.Model) -> dict[str, object]:
    # ``pre_save`` as ``save()`` runs it (``auto_now_add``); ``get_db_prep_save`` is left out:
    # on PostgreSQL it returns every value of these models' field types unchanged, but for
    # wrapping a JSONField's value for psycopg, and here the JSON array carries that value
    # itself. (The rows read back field for field as created: tests/reviews/test_add_contact.)
    return {_column(field): field.pre_save(obj, True) for field in obj._meta.concrete_fields}


def _column(field: models.Field[Any, Any]) -> str:
    """A concrete field's column (``Field.column`` is typed optional for the others)."""
    assert field.column is not None
    return field.column


def _json_value(value: object) -> object:
    """A database-ready value that ``json`` cannot write, as the text its column reads back."""
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()  # microseconds and the UTC offset included
    if isinstance(value, dt.timedelta):
        # An interval in ISO 8601; days may be negative, seconds and microseconds are not.
        return f"P{value.days}DT{value.seconds}.{value.microseconds:06d}S"
    raise TypeError(f"review_request_insert cannot pass a {type(value).__name__} through JSON")


def message_claim(*, message_id: object, now: dt.datetime) -> Message | None:
    """Claim a queued message for its send (``queued → sending``, ``attempts + 1``, the address
    captured for reconciling an unknown outcome) and move a first step's request ``scheduled →
    sending``; the claimed message with its request and the request's contact loaded (what
    the pre-send rule and the wording need), or ``None`` when it is not queued (another
    worker claimed it, it was cancelled, or this is a redelivered task whose first run
    claimed it).

    Committed before it returns. The message's status is what every writer that stops a
    message changes (an opt-out, a click, a cancel move it out of ``queued``, with the request
    locked), so finding it queued is the claim's linearisation point; the pre-send rule
    (``Message.refusal``) is then checked on the rows this claim read.

    PostgreSQL: one statement, prepared once per database session
    (``core.db.execute_prepared``). The message's request is locked first (request before
    message: the lock order of every transaction that changes both, so it never deadlocks with
    an opt-out, a click or a recorded outcome), then the conditional UPDATE, then the request,
    and the three rows come back as they are after it (the contact's ``metadata`` is left to
    load on access: a JSON column is the one type here that psycopg does not return as the model
    holds it). Replaces ``transaction.atomic()`` around locking the request
    (``select_for_update``), the conditional ``update()`` and the request's ``save()``: BEGIN,
    three statements the ORM compiles on every send, COMMIT (drain x1.18); and the read of the
    request with its contact after it, ``select_related("contact").get()`` (docs/benchmarks.md).
    SQLite (no data-modifying CTEs; one writer at a time, so nothing to lock): the UPDATE, the
    request's and that read in one transaction.
    """
    sql, field_names = _claim_sql()
    pk: Any = Message._meta.pk.get_db_prep_value(message_id, connection)
    now = Message._meta.get_field("sending_at").get_db_prep_value(now, connection)
    claim_params: list[Any] = [
        Message.Status.SENDING,
        now,
        now,
        Channel.SMS,
        pk,
        Message.Status.QUEUED,
    ]
    start_params: list[Any] = [
        ReviewRequest.Status.SENDING,
        now,
        now,
        ReviewRequest.Status.SCHEDULED,
    ]
    if connection.vendor != "postgresql":
        with transaction.atomic():
            found = list(Message.objects.raw(f"{sql.claim} RETURNING *", claim_params))
            if not found:
                return None
            message = found[0]
            if message.step == 0:
                request_id = ReviewRequest._meta.pk.get_db_prep_value(
                    message.review_request_id, connection
                )
                with connection.cursor() as cursor:
                    cursor.execute(f"{sql.start} (%s)", [*start_params, request_id])
            message.review_request = ReviewRequest.objects.select_related("contact").get(
                pk=message.review_request_id
            )
        return message
    with connection.cursor() as cursor:
        execute_prepared(
            cursor, sql.combined, [pk, *claim_params, *start_params], name="reviews_message_claim"
        )
        row = cursor.fetchone()
    if row is None:
        return None
    message_names, request_names, contact_names = field_names
    ends = (len(message_names), len(message_names) + len(request_names))
    message = Message.from_db(connection.alias, message_names, row[: ends[0]])
    request = ReviewRequest.from_db(connection.alias, request_names, row[ends[0] : ends[1]])
    request.contact = Contact.from_db(connection.alias, contact_names, row[ends[1] :])
    message.review_request = request
    return message


@dataclass(frozen=True)
class _ClaimSql:
    claim: str  # the conditional UPDATE of the message (no RETURNING)
    start: str  # the request's UPDATE, ending in "id IN " (a list or subquery follows)
    combined: str  # PostgreSQL: the whole claim in one statement


@functools.cache
def _claim_sql() -> tuple[_ClaimSql, tuple[list[str], ...]]:
    """``message_claim``'s statements, and the fields its PostgreSQL statement returns, per
    model (every concrete field, but the JSON ones)."""
    qn = connection.ops.quote_name
    m, r, c = (qn(model._meta.db_table) for model in (Message, ReviewRequest, Contact))
    claim = (
        f"UPDATE {m} SET status = %s, sending_at = %s, updated_at = %s, attempts = attempts + 1, "
        f"to_address = COALESCE((SELECT CASE WHEN {m}.channel = %s THEN c.phone ELSE c.email END "
        f"FROM {r} r JOIN {c} c ON c.id = r.contact_id WHERE r.id = {m}.review_request_id), '') "
        "WHERE id = %s AND status = %s"
    )
    start = (
        f"UPDATE {r} SET status = %s, sending_at = COALESCE(sending_at, %s), updated_at = %s "
        "WHERE status = %s AND id IN "
    )
    fields = [
        [f for f in model._meta.concrete_fields if not isinstance(f, models.JSONField)]
        for model in (Message, ReviewRequest, Contact)
    ]
    columns = ", ".join(
        f"{alias}.{qn(_column(f))}"
        for alias, group in zip(("claimed", "request", "contact"), fields, strict=True)
        for f in group
    )
    combined = (
        f"WITH locked AS (SELECT id FROM {r} WHERE id = (SELECT review_request_id FROM {m} "
        "WHERE id = %s) FOR UPDATE), "
        f"claimed AS ({claim} AND review_request_id IN (SELECT id FROM locked) RETURNING *), "
        f"started AS ({start} (SELECT review_request_id FROM claimed WHERE step = 0) "
        "RETURNING *), "
        # The request as this statement leaves it: the started row, or else the table's. Each
        # row found by its key (scalar subqueries: index lookups, whatever the estimates).
        f"request AS (SELECT * FROM started UNION ALL SELECT * FROM {r} WHERE id = "
        "(SELECT review_request_id FROM claimed) AND NOT EXISTS (SELECT FROM started)) "
        f"SELECT {columns} FROM claimed, request, {c} contact "
        "WHERE contact.id = (SELECT contact_id FROM request)"
    )
    names = tuple([f.attname for f in group] for group in fields)
    return _ClaimSql(claim, start, combined), names


def message_record_sent_rows(
    *,
    request_id: uuid.UUID,
    message_id: uuid.UUID | str,
    attempt: int,
    changes: dict[str, Any],
) -> tuple[ReviewRequest, list[Message]] | None:
    """In the caller's transaction: lock the request, move its message ``message_id`` to what
    ``changes`` says (``sent``) if it is still on attempt ``attempt`` in one of
    ``Message.sources(SENT)``, and lock the request's other messages; the request with its
    contact as the lock found them and every message of it in step order (the moved one as it
    left it), or ``None`` when the message was not moved (the request stays locked).

    PostgreSQL: one statement, prepared once per database session
    (``core.db.execute_prepared``), request before messages (the lock order of every transaction
    that changes both). Replaces ``review_request_lock`` (``select_for_update`` with the
    contact), the conditional ``update()`` and ``request.messages.select_for_update()``: three
    statements the ORM compiles on every sent message: drain x1.16 (rounds x1.16 / 1.09 / 1.29;
    ``make bench BENCH_ARGS="--skip-cache-off --messages 4000 --against <that code> --only
    dispatcher"``), statements per sent SMS 5.4 → 3.4 and Python CPU 3.5 → 2.0 ms
    (``bench/cpu.py send``). The request and the other messages come back as the locks found
    them (a ``FOR UPDATE`` returns the row's latest version, so a click or cancel that held the
    lock is seen); the contact is read as the ORM's locking read with ``select_related`` reads
    it (not locked: an opt-out locks the request after it). SQLite (one writer at a time): those
    three ORM statements.
    """
    sources = [str(status) for status in Message.sources(Message.Status.SENT)]
    if connection.vendor != "postgresql":
        request = ReviewRequest.objects.select_related("contact").get(pk=request_id)
        moved = Message.objects.filter(pk=message_id, attempts=attempt, status__in=sources)
        if not moved.update(**changes):
            return None
        return request, list(request.messages.order_by("step"))
    sql, names = _record_sent_sql(tuple(changes))
    values = [
        _message_field(name).get_db_prep_save(value, connection) for name, value in changes.items()
    ]
    pk: Any = Message._meta.pk.get_db_prep_value(message_id, connection)
    with connection.cursor() as cursor:
        execute_prepared(
            cursor,
            sql,
            [request_id, *values, pk, attempt, sources],
            name="reviews_message_record_sent",
        )
        rows = cursor.fetchall()
    if not rows:
        return None
    request_names, contact_names, message_names = names
    ends = (len(request_names), len(request_names) + len(contact_names))
    request = ReviewRequest.from_db(connection.alias, request_names, rows[0][: ends[0]])
    request.contact = Contact.from_db(connection.alias, contact_names, rows[0][ends[0] : ends[1]])
    messages = [Message.from_db(connection.alias, message_names, row[ends[1] :]) for row in rows]
    for message in messages:
        message.review_request = request
    return request, messages


@functools.cache
def _record_sent_sql(changed: tuple[str, ...]) -> tuple[str, tuple[list[str], ...]]:
    """``message_record_sent_rows``'s statement for the fields in ``changed``, and the fields it
    returns per model (every concrete field, but the JSON ones)."""
    qn = connection.ops.quote_name
    m, r, c = (qn(model._meta.db_table) for model in (Message, ReviewRequest, Contact))
    fields = [
        [f for f in model._meta.concrete_fields if not isinstance(f, models.JSONField)]
        for model in (ReviewRequest, Contact, Message)
    ]
    request_fields, contact_fields, message_fields = fields
    locked_columns = ", ".join(
        [f"r.{qn(_column(f))} AS r_{_column(f)}" for f in request_fields]
        + [f"c.{qn(_column(f))} AS c_{_column(f)}" for f in contact_fields]
    )
    assignments = ", ".join(f"{qn(_column(_message_field(name)))} = %s" for name in changed)
    columns = ", ".join(
        [f"locked.r_{_column(f)}" for f in request_fields]
        + [f"locked.c_{_column(f)}" for f in contact_fields]
        + [f"messages.{qn(_column(f))}" for f in message_fields]
    )
    sql = (
        f"WITH locked AS (SELECT {locked_columns} FROM {r} r JOIN {c} c ON c.id = r.contact_id "
        "WHERE r.id = %s FOR UPDATE OF r), "
        f"moved AS (UPDATE {m} SET {assignments} WHERE id = %s AND attempts = %s "
        "AND status = ANY(%s) AND review_request_id IN (SELECT r_id FROM locked) RETURNING *), "
        f"others AS (SELECT * FROM {m} WHERE review_request_id = "
        "(SELECT review_request_id FROM moved) AND id <> (SELECT id FROM moved) FOR UPDATE), "
        "messages AS (SELECT * FROM moved UNION ALL SELECT * FROM others) "
        f"SELECT {columns} FROM locked, messages ORDER BY messages.step"
    )
    names = tuple([f.attname for f in group] for group in fields)
    return sql, names


def _message_field(name: str) -> models.Field[Any, Any]:
    field = Message._meta.get_field(name)
    assert isinstance(field, models.Field)
    return field
