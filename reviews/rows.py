"""Hand-written statements on the hot paths, and model instances from their plain-cursor rows.

Every API write matches contacts, and every send claims its row and records its outcome. Built
through the ORM, each of those statements is compiled again on every call, and that compiling
(and ``RawQuerySet``) was most of their CPU. So their SQL is written once per shape
(``functools.cache``) and the rows are turned into instances here, with the ORM's own
converters (as ``SQLCompiler.apply_converters`` does) and ``Model.from_db``: an instance loaded
this way is the one the ORM would have loaded (tests compare them).

Several statements can share one round trip (``run``): on PostgreSQL with client-side binding
(the default here), a query string of several statements is sent at once with the simple
protocol and runs as one implicit transaction, each statement with its own snapshot (READ
COMMITTED), in order. Elsewhere (SQLite, or server-side binding) they run one after the other.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, transaction
from django.db.models import Model
from psycopg import pq


@functools.cache
def _loading(model: type[Model], vendor: str) -> tuple[list[str], list[tuple[int, list, Any]]]:
    """The attribute names for ``Model.from_db``, and each column's database and field
    converters that are not no-ops."""
    db = connections[DEFAULT_DB_ALIAS]
    fields = model._meta.concrete_fields
    converters = []
    for position, field in enumerate(fields):
        column = field.get_col(model._meta.db_table)
        functions = db.ops.get_db_converters(column) + column.get_db_converters(db)
        if functions:
            converters.append((position, functions, column))
    return [field.attname for field in fields], converters


def width(model: type[Model]) -> int:
    """How many columns ``columns(model, ...)`` selects."""
    return len(model._meta.concrete_fields)


@functools.cache
def columns(model: type[Model], alias: str) -> str:
    """The model's concrete columns, qualified by ``alias``, in ``from_db`` order."""
    qn = connections[DEFAULT_DB_ALIAS].ops.quote_name
    return ", ".join(f"{alias}.{qn(field.column)}" for field in model._meta.concrete_fields)


def load(model: type[Model], values: Sequence[Any], start: int = 0) -> Model:
    """The instance held by ``values[start:start + width(model)]``, as the ORM loads it."""
    db = connections[DEFAULT_DB_ALIAS]
    attnames, converters = _loading(model, db.vendor)
    row = list(values[start : start + len(attnames)])
    for position, functions, column in converters:
        for convert in functions:
            row[position] = convert(row[position], column, db)
    return model.from_db(db.alias, attnames, row)


def load_optional(model: type[Model], values: Sequence[Any], start: int = 0) -> Model | None:
    """``load`` for the columns of an outer join: ``None`` when its primary key is NULL."""
    if values[start] is None:  # the primary key comes first in ``concrete_fields``
        return None
    return load(model, values, start)


def together() -> bool:
    """Whether several statements can go in one query string (see the module docstring)."""
    db = connections[DEFAULT_DB_ALIAS]
    return db.vendor == "postgresql" and not db.settings_dict["OPTIONS"].get("server_side_binding")


Statement = tuple[str, Sequence[Any]]  # SQL with ``%s`` placeholders, and its parameters


def run(
    statements: Sequence[Statement], *, atomic: bool = False, commit: bool = False
) -> list[list[tuple]]:
    """Run the statements in order; every statement's rows (``[]`` for one that returns none).

    One round trip where ``together()``: outside a transaction, PostgreSQL runs the statements
    of one query string as one implicit transaction (no ``BEGIN``/``COMMIT`` round trips).
    ``atomic``: they must commit or fail as one everywhere, so where they run one by one they
    run inside ``transaction.atomic()``.

    ``commit``: these are the last statements of the caller's ``atomic()`` block. If that block
    is the outermost one (``commits_here()``), the query string ends with ``COMMIT``: the
    server commits in the same round trip, and the block's own commit on exit finds no
    transaction open and sends nothing (psycopg skips it): one round trip fewer, the same
    outcome. If a statement fails, the ``COMMIT`` never runs and the block rolls back as
    usual. Anywhere else (inside a caller's transaction, a savepoint, a test's transaction,
    statements run one by one) nothing is appended and the block commits as before."""
    if not statements:
        return []
    if atomic and not (together() and len(statements) > 1):
        with transaction.atomic():
            return run(statements)
    if commit and together() and commits_here():
        return run([*statements, ("COMMIT", [])])[:-1]
    db = connections[DEFAULT_DB_ALIAS]
    results: list[list[tuple]] = []
    with db.cursor() as cursor:
        if together() and len(statements) > 1:
            cursor.execute(
                "; ".join(sql for sql, _ in statements),
                [param for _, params in statements for param in params],
            )
            for index in range(len(statements)):
                if index:
                    cursor.nextset()
                results.append(_rows(cursor))
        else:
            for sql, params in statements:
                cursor.execute(sql, params)
                results.append(_rows(cursor))
    return results


def commits_here() -> bool:
    """Whether the current ``atomic()`` block is the outermost one and will commit on exit:
    the only block whose last statements may carry its ``COMMIT`` (``run(commit=True)``).

    Read from the connection's transaction state as ``Atomic`` keeps it: one block open, to
    be committed on exit, not marked for rollback. A ``TestCase``'s test always runs two
    blocks deep (the class's and the test's), so its transaction is never committed."""
    db = connections[DEFAULT_DB_ALIAS]
    return (
        db.in_atomic_block
        and len(db.atomic_blocks) == 1
        and db.commit_on_exit
        and not db.needs_rollback
    )


def _rows(cursor) -> list[tuple]:
    # psycopg builds a Column object per column for ``description``: the result's status
    # says as much for nothing.
    result = getattr(cursor.cursor, "pgresult", None)
    if result is not None:
        return cursor.fetchall() if result.status == pq.ExecStatus.TUPLES_OK else []
    return cursor.fetchall() if cursor.description else []


def update(instance: Model, fields: Sequence[str]) -> None:
    """``instance.save(update_fields=fields)`` for a row that exists (it raises otherwise),
    with the statement written once per model and fields. Each field's ``pre_save`` runs
    (``auto_now``); no signals are sent: for models that have no receivers."""
    db = connections[DEFAULT_DB_ALIAS]
    meta = instance._meta
    chosen = [meta.get_field(name) for name in fields]
    values = [field.get_db_prep_save(field.pre_save(instance, False), db) for field in chosen]
    values.append(meta.pk.get_db_prep_value(instance.pk, db))
    with db.cursor() as cursor:
        cursor.execute(_update_sql(type(instance), tuple(fields)), values)
        if cursor.rowcount != 1:
            raise DatabaseError(f"{meta.label} {instance.pk}: the update found no row")


@functools.cache
def _update_sql(model: type[Model], fields: tuple[str, ...]) -> str:
    qn = connections[DEFAULT_DB_ALIAS].ops.quote_name
    meta = model._meta
    assignments = ", ".join(f"{qn(meta.get_field(name).column)} = %s" for name in fields)
    return f"UPDATE {qn(meta.db_table)} SET {assignments} WHERE {qn(meta.pk.column)} = %s"
