"""Inserting the rows of a new review request in one statement (the API's write path).

``add_contact`` creates up to five rows for a new person: the contact, the request and its
messages. Saved one by one through the ORM that is three INSERTs, and most of the endpoint's
CPU went into building them (docs/benchmarks.md). Every one of these models takes its primary
key from Python (``uuid4``), so no row waits for another's id: on PostgreSQL they go in as one
statement, a chain of data-modifying CTEs (foreign keys are checked at the end of the
statement, so a request may reference a contact inserted beside it). Elsewhere (SQLite, the
embedded default), one ``bulk_create`` per model.

Each model's rows travel as ONE parameter, a JSON array of objects that PostgreSQL turns into
rows with ``jsonb_populate_recordset(NULL::<table>, ...)`` (each value goes through the
column type's own input function, exactly as a text literal would). The statement's text is
then the same for every request of one shape, short and with a handful of parameters, so
psycopg converts it once and caches it, instead of splitting a ~100-placeholder query and
quoting every value on every request (a third of this function's cost before).

Like ``save()``, each field's ``pre_save`` runs (``auto_now``/``auto_now_add``) and every value
is converted by its field; unlike it, no model signal is sent (none is connected to these
models: ``add_contact`` is their only creator of this kind).
"""

from __future__ import annotations

import datetime as dt
import enum
import functools
import json
import uuid
from collections.abc import Sequence
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, models
from psycopg.types.json import Json, Jsonb

from .rows import Statement
from .rows import run as rows_run


def insert_together(
    *groups: Sequence[models.Model], then: Sequence[Statement] = (), commit: bool = False
) -> None:
    """Insert the unsaved instances, model by model in the given order, in one statement.

    ``then``: statements to run right after it, in the caller's transaction: in the same
    round trip where ``rows.together()``, one by one elsewhere (``rows.run``). ``commit``:
    these are the last statements of the caller's ``atomic()`` block, which may then commit
    in the same round trip (``rows.run(commit=True)``: only the outermost block does)."""
    groups = tuple(rows for rows in groups if rows)
    if not groups:
        rows_run(then, commit=commit)
        return
    for rows in groups:
        for obj in rows:
            if obj.pk is None:
                raise ValueError(f"{obj!r} needs its primary key set before the insert")
    connection = connections[DEFAULT_DB_ALIAS]
    if connection.vendor != "postgresql":
        for rows in groups:
            type(rows[0]).objects.bulk_create(rows)
        rows_run(then, commit=commit)
        return
    params = [
        json.dumps([_row_json(obj, connection) for obj in rows], separators=(",", ":"))
        for rows in groups
    ]
    rows_run([(_statement(tuple(type(rows[0]) for rows in groups)), params), *then], commit=commit)
    for rows in groups:
        for obj in rows:
            obj._state.adding = False
            obj._state.db = connection.alias


@functools.cache
def _statement(models_in_order: tuple[type[models.Model], ...]) -> str:
    """``WITH insert_0 AS (INSERT ...), ... INSERT ...``: one ``%s`` (a JSON array) per model."""
    qn = connections[DEFAULT_DB_ALIAS].ops.quote_name
    inserts = []
    for model in models_in_order:
        table = qn(model._meta.db_table)
        columns = ", ".join(qn(f.column) for f in model._meta.concrete_fields)
        inserts.append(
            f"INSERT INTO {table} ({columns}) SELECT {columns} "
            f"FROM jsonb_populate_recordset(NULL::{table}, %s::jsonb)"
        )
    *ctes, last = inserts
    head = "".join(
        ("WITH " if n == 0 else ", ") + f"{qn(f'insert_{n}')} AS ({cte})"
        for n, cte in enumerate(ctes)
    )
    return f"{head} {last}".strip()


def _row_json(obj: models.Model, connection) -> dict[str, Any]:
    row = {}
    for column, field, kind in _columns(type(obj)):
        value = field.pre_save(obj, True)
        # The common cases, where the field's own conversion would return the value unchanged
        # (None is NULL for every kind but OTHER: a JSONField's None is its own business);
        # anything else goes through the field.
        if kind is not _Kind.OTHER and (value is None or (kind, type(value)) in _STORED_AS_IS):
            row[column] = value
        elif kind is _Kind.UUID and type(value) is uuid.UUID:
            row[column] = str(value)
        elif kind is _Kind.DATETIME and type(value) is dt.datetime and value.tzinfo is not None:
            row[column] = value.isoformat()
        else:
            row[column] = _json_value(field.get_db_prep_save(value, connection))
    return row


class _Kind(enum.Enum):
    TEXT = "text"  # CharField, EmailField, TextField: a str is stored as it is
    UUID = "uuid"  # UUIDField, or a ForeignKey to one: a UUID is stored as its text
    DATETIME = "datetime"  # DateTimeField: an aware datetime is stored as it is
    INTEGER = "integer"  # the integer fields: an int is stored as it is
    OTHER = "other"


_STORED_AS_IS = frozenset({(_Kind.TEXT, str), (_Kind.INTEGER, int)})


@functools.cache
def _columns(model: type[models.Model]) -> tuple[tuple[str, models.Field, _Kind], ...]:
    """(column, field, kind) of each concrete field, in ``_meta`` order."""
    text = (models.CharField, models.EmailField, models.TextField)
    integers = (models.IntegerField, models.PositiveSmallIntegerField, models.SmallIntegerField,
                models.PositiveIntegerField, models.BigIntegerField)  # fmt: skip
    columns = []
    for field in model._meta.concrete_fields:
        target = field.target_field if isinstance(field, models.ForeignKey) else field
        if type(target) in text:
            kind = _Kind.TEXT
        elif type(target) is models.UUIDField:
            kind = _Kind.UUID
        elif type(target) is models.DateTimeField:
            kind = _Kind.DATETIME
        elif type(target) in integers:
            kind = _Kind.INTEGER
        else:
            kind = _Kind.OTHER
        columns.append((field.column, field, kind))
    return tuple(columns)


def _json_value(value: Any) -> Any:
    """A database-ready value as JSON that the column's input function reads back unchanged."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()  # microseconds and the UTC offset included
    if isinstance(value, dt.timedelta):
        # ISO 8601 with designators; days may be negative, seconds and microseconds are not.
        return f"P{value.days}DT{value.seconds}.{value.microseconds:06d}S"
    if isinstance(value, (Json, Jsonb)):
        # A JSONField value: its own encoder decides how it is written, then it is nested as is.
        return json.loads((value.dumps or json.dumps)(value.obj))
    raise TypeError(f"insert_together cannot pass a {type(value).__name__} through JSON")
