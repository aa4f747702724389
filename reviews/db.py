"""The hand-written statements of the reviews app: the few that pay for themselves.

Everything else goes through the ORM. Each statement is a literal below, read top to bottom:
``%s`` for its parameters, ``{...}`` for the parts generated from the models (tables, column
lists: ``core.db``), filled in once per process; on PostgreSQL it is prepared once per
database session (``core.db.execute_prepared``). Beside each is its ORM twin, ``<name>_orm``:
the ORM code it replaced, which SQLite runs where the statement needs PostgreSQL, and which
``tests/reviews/test_db.py`` runs against the statement on the same rows. Each docstring says
what the statement replaces and the guarantee it relies on; what it gained, measured side by
side with that ORM code, is in docs/benchmarks.md (Optimisations kept).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import uuid
from collections.abc import Sequence
from typing import Any

from django.db import connection, models, transaction
from django.db.models import Case, F, OuterRef, Q, Subquery, Value, When
from django.db.models.functions import Coalesce

from accounts.models import User
from core.db import (
    ModelsRow,
    assignments,
    column,
    columns,
    execute_prepared,
    fields,
    prepared_sql,
    sql_text,
    table,
)

from .models import Channel, Contact, Message, ReviewRequest

# --- Adding a contact --------------------------------------------------------------------------

_CONTACT_ADD_LOCK = "SELECT pg_advisory_xact_lock(CAST(%s AS bigint))"


def contact_add_lock(*, owner: User, email_normalized: str, phone: str) -> None:
    """Serialise adds of one person: call first in ``contact_add``'s transaction, then
    ``contacts_matching``.

    PostgreSQL: a transaction-scoped advisory lock per key (the normalised e-mail, the E.164
    phone), sorted so two transactions wanting the same pair cannot deadlock, each in a
    statement of its own, held until commit or rollback. The match must be a separate, later
    statement: under READ COMMITTED a statement reads a snapshot taken when it starts, so a
    match in the lock's own statement would not see a contact committed while it waited. A
    64-bit hash collision only makes two unrelated adds wait for each other.

    Replaces: nothing in the ORM, so it has no twin (``select_for_update`` can only lock rows
    that exist, and a new person has none). Without it, concurrent adds of one new person both
    insert, and one fails on a unique constraint and runs again: correct, but a retry per race.

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
            execute_prepared(cursor, _CONTACT_ADD_LOCK, [key], name="reviews_contact_add_lock")


def _lock_key(owner_id: object, kind: str, value: str) -> int:
    name = f"contact:{owner_id}:{kind}:{value}"
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


# {keys}: the e-mail's condition, the phone's, or both joined by OR. Each says its unique
# index's condition ("<> ''"), so that the plan of the prepared statement, made for any value,
# may still use that partial index.
_CONTACTS_MATCHING = """
SELECT * FROM {contact}
WHERE owner_id = %s AND ({keys})
ORDER BY id
FOR UPDATE
"""
_EMAIL_MATCHES = "(email_normalized = %s AND email_normalized <> '')"
_PHONE_MATCHES = "(phone = %s AND phone <> '')"


@functools.cache
def _contacts_matching_sql(email: bool, phone: bool) -> str:
    keys = [key for key, given in ((_EMAIL_MATCHES, email), (_PHONE_MATCHES, phone)) if given]
    return sql_text(_CONTACTS_MATCHING, contact=table(Contact), keys=" OR ".join(keys))


def contacts_matching(*, owner: User, email_normalized: str, phone: str) -> list[Contact]:
    """The owner's contacts with this e-mail key or this E.164 phone (at most two rows),
    locked (call inside a transaction), in primary-key order so that two transactions locking
    the same pair cannot deadlock. A blank key matches nothing.

    PostgreSQL: written once (``Contact.objects.raw``) and prepared once per database session
    (``core.db.prepared_sql``) instead of the queryset the ORM compiles on every API write,
    ``contacts_matching_orm``, which SQLite runs (its writers run one at a time: nothing to
    lock).
    """
    if connection.vendor != "postgresql":
        return contacts_matching_orm(owner=owner, email_normalized=email_normalized, phone=phone)
    keys = [key for key in (email_normalized, phone) if key]
    if not keys:
        return []
    params: list[Any] = [User._meta.pk.get_db_prep_value(owner.pk, connection), *keys]
    sql = _contacts_matching_sql(bool(email_normalized), bool(phone))
    return list(
        Contact.objects.raw(prepared_sql(sql, params, name="reviews_contacts_matching"), params)
    )


def contacts_matching_orm(*, owner: User, email_normalized: str, phone: str) -> list[Contact]:
    """``contacts_matching`` through the ORM: its twin, and what SQLite runs."""
    keys = Q()
    if email_normalized:
        keys |= Q(email_normalized=email_normalized)
    if phone:
        keys |= Q(phone=phone)
    if not keys:
        return []
    return list(Contact.objects.select_for_update().filter(keys, owner=owner).order_by("pk"))


# Each model's rows are one parameter: a JSON array that jsonb_populate_recordset turns into
# rows of its table. A request's contact and messages may be none ("[]").
_REVIEW_REQUEST_INSERT = """
WITH new_contact AS (
    INSERT INTO {contact} ({contact_columns})
    SELECT {contact_columns} FROM jsonb_populate_recordset(NULL::{contact}, %s::jsonb)
),
new_request AS (
    INSERT INTO {request} ({request_columns})
    SELECT {request_columns} FROM jsonb_populate_recordset(NULL::{request}, %s::jsonb)
)
INSERT INTO {message} ({message_columns})
SELECT {message_columns} FROM jsonb_populate_recordset(NULL::{message}, %s::jsonb)
"""


@functools.cache
def _review_request_insert_sql() -> str:
    return sql_text(
        _REVIEW_REQUEST_INSERT,
        contact=table(Contact),
        contact_columns=columns(fields(Contact)),
        request=table(ReviewRequest),
        request_columns=columns(fields(ReviewRequest)),
        message=table(Message),
        message_columns=columns(fields(Message)),
    )


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
    text literal would be): the statement's text is the same for every request, short, and
    prepared once per database session (``core.db.prepared_sql``), instead of a hundred
    placeholders split, quoted and planned on every request.

    Replaces ``review_request_insert_orm``, ``bulk_create()`` model by model (three INSERTs,
    three round trips), which SQLite runs (no data-modifying CTEs). Relies on: these models'
    field types (text, integers, UUIDs, datetimes, an interval, a JSON object) needing no
    conversion on PostgreSQL beyond what JSON and the column's input function do; no model
    signal is sent, and none is connected to these models (``contact_add`` is their only
    creator of this kind).
    """
    if connection.vendor != "postgresql":
        review_request_insert_orm(contact=contact, request=request, messages=messages)
        return
    groups: list[list[models.Model]] = [
        [contact] if contact is not None else [],
        [request],
        list(messages),
    ]
    params = [json.dumps([_row(obj) for obj in rows], default=_json_value) for rows in groups]
    with connection.cursor() as cursor:
        execute_prepared(
            cursor, _review_request_insert_sql(), params, name="reviews_review_request_insert"
        )
    for rows in groups:
        for obj in rows:
            obj._state.adding = False
            obj._state.db = connection.alias


def review_request_insert_orm(
    *, contact: Contact | None, request: ReviewRequest, messages: Sequence[Message]
) -> None:
    """``review_request_insert`` through the ORM, ``bulk_create`` model by model: its twin,
    and what SQLite runs."""
    if contact is not None:
        Contact.objects.bulk_create([contact])
    ReviewRequest.objects.bulk_create([request])
    Message.objects.bulk_create(list(messages))


def _row(obj: models.Model) -> dict[str, object]:
    # ``pre_save`` as ``save()`` runs it (``auto_now_add``); ``get_db_prep_save`` is left out:
    # on PostgreSQL it returns every value of these models' field types unchanged, but for
    # wrapping a JSONField's value for psycopg, and here the JSON array carries that value
    # itself. (The rows read back field for field as created:
    # tests/reviews/services/test_contacts.py.)
    return {column(field): field.pre_save(obj, True) for field in obj._meta.concrete_fields}


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


# --- Sending a message -------------------------------------------------------------------------

# The claim's row: the message, its request, the request's contact (not the contact's JSON
# metadata: ``core.db.fields``).
_CLAIM_ROW = ModelsRow(Message, ReviewRequest, Contact, json=False)

# The request locked first; the message claimed if still queued, its address captured; the
# request started if the message is its first step; the request as the statement leaves it
# (started, or else the table's row), each row found by its key (scalar subqueries: index
# lookups, whatever the estimates); the three rows.
_MESSAGE_CLAIM = """
WITH locked AS (
    SELECT id FROM {request}
    WHERE id = (SELECT review_request_id FROM {message} WHERE id = %s)
    FOR UPDATE
),
claimed AS (
    UPDATE {message}
    SET status = %s, sending_at = %s, updated_at = %s, attempts = attempts + 1,
        to_address = COALESCE((
            SELECT CASE WHEN {message}.channel = %s THEN c.phone ELSE c.email END
            FROM {request} r JOIN {contact} c ON c.id = r.contact_id
            WHERE r.id = {message}.review_request_id
        ), '')
    WHERE id = %s AND status = %s AND review_request_id IN (SELECT id FROM locked)
    RETURNING *
),
started AS (
    UPDATE {request}
    SET status = %s, sending_at = COALESCE(sending_at, %s), updated_at = %s
    WHERE status = %s AND id IN (SELECT review_request_id FROM claimed WHERE step = 0)
    RETURNING *
),
request AS (
    SELECT * FROM started
    UNION ALL
    SELECT * FROM {request}
    WHERE id = (SELECT review_request_id FROM claimed) AND NOT EXISTS (SELECT FROM started)
)
SELECT {claimed_columns}, {request_columns}, {contact_columns}
FROM claimed, request, {contact} contact
WHERE contact.id = (SELECT contact_id FROM request)
"""


@functools.cache
def _message_claim_sql() -> str:
    return sql_text(
        _MESSAGE_CLAIM,
        message=table(Message),
        request=table(ReviewRequest),
        contact=table(Contact),
        claimed_columns=_CLAIM_ROW.columns(Message, "claimed"),
        request_columns=_CLAIM_ROW.columns(ReviewRequest, "request"),
        contact_columns=_CLAIM_ROW.columns(Contact, "contact"),
    )


def message_claim(*, message_id: uuid.UUID | str, now: dt.datetime) -> Message | None:
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
    load on access: ``core.db.fields``). Replaces ``message_claim_orm``, which SQLite runs (no
    data-modifying CTEs): a transaction locking the request, the conditional ``update()``, the
    read of the message with its request and contact, and the request's ``update()``.
    """
    if connection.vendor != "postgresql":
        return message_claim_orm(message_id=message_id, now=now)
    pk: Any = Message._meta.pk.get_db_prep_value(message_id, connection)
    now = Message._meta.get_field("sending_at").get_db_prep_value(now, connection)
    params: list[Any] = [
        pk,  # the request to lock
        Message.Status.SENDING,
        now,
        now,
        Channel.SMS,
        pk,
        Message.Status.QUEUED,
        ReviewRequest.Status.SENDING,
        now,
        now,
        ReviewRequest.Status.SCHEDULED,
    ]
    with connection.cursor() as cursor:
        execute_prepared(cursor, _message_claim_sql(), params, name="reviews_message_claim")
        row = cursor.fetchone()
    if row is None:
        return None
    message = _CLAIM_ROW.load(Message, row, using=connection.alias)
    message.review_request = _CLAIM_ROW.load(ReviewRequest, row, using=connection.alias)
    message.review_request.contact = _CLAIM_ROW.load(Contact, row, using=connection.alias)
    return message


def message_claim_orm(*, message_id: uuid.UUID | str, now: dt.datetime) -> Message | None:
    """``message_claim`` through the ORM, in one transaction: its twin, and what SQLite runs
    (nothing to lock there: its writers run one at a time)."""
    with transaction.atomic():
        if connection.features.has_select_for_update:  # the request first: the lock order
            requests = ReviewRequest.objects.select_for_update().filter(messages__pk=message_id)
            list(requests.values_list("pk", flat=True))
        contact = Contact.objects.filter(review_requests=OuterRef("review_request_id"))
        address = Case(
            When(channel=Channel.SMS, then=Subquery(contact.values("phone"))),
            default=Subquery(contact.values("email")),
            output_field=models.CharField(),
        )
        claimed = Message.objects.filter(pk=message_id, status=Message.Status.QUEUED).update(
            status=Message.Status.SENDING,
            sending_at=now,
            updated_at=now,
            attempts=F("attempts") + 1,
            to_address=Coalesce(address, Value("")),
        )
        if not claimed:
            return None
        message = Message.objects.select_related("review_request__contact").get(pk=message_id)
        request = message.review_request
        if message.step == 0 and request.status == ReviewRequest.Status.SCHEDULED:
            request.status = ReviewRequest.Status.SENDING
            request.sending_at = request.sending_at or now
            request.updated_at = now
            ReviewRequest.objects.filter(
                pk=request.pk, status=ReviewRequest.Status.SCHEDULED
            ).update(status=request.status, sending_at=request.sending_at, updated_at=now)
    return message


# The row: the request and its contact as the lock found them, then one of the request's
# messages (every concrete field, but the JSON ones: ``core.db.fields``).
_RECORD_SENT_ROW = ModelsRow(ReviewRequest, Contact, Message, json=False)

# The request locked, read with its contact (their columns renamed r_..., c_...); the message
# moved if still on this attempt in a status it may leave for sent; the request's other
# messages locked; one row per message, in step order. {changes}: "<column> = %s" for each
# field changed.
_MESSAGE_RECORD_SENT = """
WITH locked AS (
    SELECT {request_as_r}, {contact_as_c}
    FROM {request} r JOIN {contact} c ON c.id = r.contact_id
    WHERE r.id = %s
    FOR UPDATE OF r
),
moved AS (
    UPDATE {message} SET {changes}
    WHERE id = %s AND attempts = %s AND status = ANY(%s)
        AND review_request_id IN (SELECT r_id FROM locked)
    RETURNING *
),
others AS (
    SELECT * FROM {message}
    WHERE review_request_id = (SELECT review_request_id FROM moved)
        AND id <> (SELECT id FROM moved)
    FOR UPDATE
),
messages AS (
    SELECT * FROM moved UNION ALL SELECT * FROM others
)
SELECT {locked_request}, {locked_contact}, {message_columns}
FROM locked, messages
ORDER BY messages.step
"""


@functools.cache
def _message_record_sent_sql(changed: tuple[str, ...]) -> str:
    return sql_text(
        _MESSAGE_RECORD_SENT,
        request=table(ReviewRequest),
        contact=table(Contact),
        message=table(Message),
        request_as_r=_RECORD_SENT_ROW.columns(ReviewRequest, "r", as_prefix="r_"),
        contact_as_c=_RECORD_SENT_ROW.columns(Contact, "c", as_prefix="c_"),
        changes=assignments(_message_field(name) for name in changed),
        locked_request=_RECORD_SENT_ROW.columns(ReviewRequest, "locked", prefix="r_"),
        locked_contact=_RECORD_SENT_ROW.columns(Contact, "locked", prefix="c_"),
        message_columns=_RECORD_SENT_ROW.columns(Message, "messages"),
    )


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
    that changes both). Replaces ``message_record_sent_rows_orm``, which SQLite runs (one writer
    at a time): ``review_request_lock`` (``select_for_update`` with the contact), the
    conditional ``update()`` and ``request.messages.select_for_update()``, three statements the
    ORM compiles on every sent message. The request and the other messages come back as the
    locks found them (a ``FOR UPDATE`` returns the row's latest version, so a click or cancel
    that held the lock is seen); the contact is read as the ORM's locking read with
    ``select_related`` reads it (not locked: an opt-out locks the request after it).
    """
    if connection.vendor != "postgresql":
        return message_record_sent_rows_orm(
            request_id=request_id, message_id=message_id, attempt=attempt, changes=changes
        )
    sources = [str(status) for status in Message.sources(Message.Status.SENT)]
    values = [
        _message_field(name).get_db_prep_save(value, connection) for name, value in changes.items()
    ]
    pk: Any = Message._meta.pk.get_db_prep_value(message_id, connection)
    with connection.cursor() as cursor:
        execute_prepared(
            cursor,
            _message_record_sent_sql(tuple(changes)),
            [request_id, *values, pk, attempt, sources],
            name="reviews_message_record_sent",
        )
        rows = cursor.fetchall()
    if not rows:
        return None
    request = _RECORD_SENT_ROW.load(ReviewRequest, rows[0], using=connection.alias)
    request.contact = _RECORD_SENT_ROW.load(Contact, rows[0], using=connection.alias)
    messages = [_RECORD_SENT_ROW.load(Message, row, using=connection.alias) for row in rows]
    for message in messages:
        message.review_request = request
    return request, messages


def message_record_sent_rows_orm(
    *,
    request_id: uuid.UUID,
    message_id: uuid.UUID | str,
    attempt: int,
    changes: dict[str, Any],
) -> tuple[ReviewRequest, list[Message]] | None:
    """``message_record_sent_rows`` through the ORM, in the caller's transaction: its twin, and
    what SQLite runs (where ``select_for_update`` locks nothing: its writers run one at a
    time)."""
    sources = [str(status) for status in Message.sources(Message.Status.SENT)]
    request = (
        ReviewRequest.objects.select_for_update(of=("self",))
        .select_related("contact")
        .get(pk=request_id)
    )
    moved = Message.objects.filter(
        pk=message_id, review_request=request, attempts=attempt, status__in=sources
    )
    if not moved.update(**changes):
        return None
    return request, list(request.messages.select_for_update().order_by("step"))


def _message_field(name: str) -> models.Field[Any, Any]:
    field = Message._meta.get_field(name)
    assert isinstance(field, models.Field)
    return field
