"""Database helpers shared by every app: bounded housekeeping deletes, and the prepared
statements of the hand-written SQL on a hot path."""

from __future__ import annotations

import functools
import hashlib
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models import Model, QuerySet

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.db.backends.utils import CursorWrapper

# The statements ``execute_prepared`` has prepared in each connection's current database
# session (a prepared statement lives as long as its session; ``connection_created`` starts
# a new one).
_prepared: weakref.WeakKeyDictionary[BaseDatabaseWrapper, set[str]] = weakref.WeakKeyDictionary()


def delete_in_batches(
    queryset: QuerySet[Model], *, batch_size: int | None = None
) -> tuple[int, dict[str, int]]:
    """Delete the rows of ``queryset`` a batch at a time, each batch in its own transaction.

    One unbounded ``DELETE`` of a million expired rows holds its locks, bloats the WAL and
    blocks vacuum until it ends; here each transaction deletes at most ``batch_size`` rows
    (``PURGE_BATCH_SIZE`` by default), chosen by primary key, and the loop runs until a batch
    comes back short. The filter is re-evaluated for every batch, so rows that stop matching
    (or are deleted by a concurrent purge) are simply not seen again. Returns the same pair
    as ``QuerySet.delete()``: the total of rows deleted (cascades included) and the count per
    model label.
    """
    size = settings.PURGE_BATCH_SIZE if batch_size is None else batch_size
    if size < 1:
        raise ValueError("batch_size must be at least 1")
    queryset = queryset.order_by()
    pks = queryset.values_list("pk", flat=True)
    total = 0
    per_model: dict[str, int] = {}
    while True:
        with transaction.atomic(using=queryset.db):
            batch = list(pks[:size])
            if batch:
                # The filter again: a row that stopped matching since the SELECT stays.
                deleted, counts = queryset.filter(pk__in=batch).delete()
                total += deleted
                for label, n in counts.items():
                    per_model[label] = per_model.get(label, 0) + n
        if len(batch) < size:
            return total, per_model


def execute_prepared(
    cursor: CursorWrapper,
    sql: str,
    params: Sequence[Any],
    *,
    name: str,
    using: str = DEFAULT_DB_ALIAS,
) -> None:
    """Execute ``sql`` (``%s`` placeholders) with ``params`` on ``cursor``; on PostgreSQL as a
    prepared statement of the database session (``prepared_sql``)."""
    cursor.execute(_prepared_text(cursor, sql, params, name=name, using=using), params)


def prepared_sql(
    sql: str, params: Sequence[Any], *, name: str, using: str = DEFAULT_DB_ALIAS
) -> str:
    """The text that runs ``sql`` (``%s`` placeholders) with ``params``: on PostgreSQL
    ``EXECUTE <name>(%s, ...)`` of a statement this database session has prepared (preparing
    it now on the session's first use), so the server parses and plans it once per connection
    instead of on every call. For ``cursor.execute`` or ``Model.objects.raw``.

    For the few hand-written statements on a hot path, whose planning costs as much as their
    execution or more (``pg_stat_statements``): the send path's claim and outcome (0.5-0.6 of
    0.7-1.0 ms alone, 2.5 of 3.6 ms under load: dispatcher drain x1.26 and x1.25 in two runs,
    PostgreSQL CPU per sent SMS 3.7-5.3 → 1.9-2.5 ms), and the API write's key claim and stored
    response, dedup lock, contact match and insert (planning 0.47 of their 1.2 ms per request;
    docs/benchmarks.md).

    The name carries a hash of the text, so a changed statement never meets an older one of
    the same name; a parameter whose type the statement leaves open needs a cast (``CAST(%s
    AS integer)``). Both statements go through Django's cursor (its error translation, query
    log and execute wrappers). A statement looking rows up by key has one plan whatever the
    values, so PostgreSQL's generic plan is the custom one; and PostgreSQL plans a prepared
    statement again when a table it reads is altered or has its statistics updated
    (``PREPARE``, "Notes").

    Off with ``DATABASE_PREPARED_STATEMENTS=false``: needed behind a pooler that hands
    transactions of one connection to different server sessions (PgBouncer in transaction
    mode), where a session's statements are not there. Other databases: ``sql`` itself.
    """
    # The cursor first: it connects, and a new session starts with an empty set.
    with connections[using].cursor() as cursor:
        return _prepared_text(cursor, sql, params, name=name, using=using)


def _prepared_text(
    cursor: CursorWrapper, sql: str, params: Sequence[Any], *, name: str, using: str
) -> str:
    """``prepared_sql`` on an open cursor of ``using`` (so its session is the current one)."""
    connection = connections[using]
    if connection.vendor != "postgresql" or not settings.DATABASE_PREPARED_STATEMENTS:
        return sql
    statement = _statement_name(name, sql)
    prepared = _prepared.setdefault(connection, set())
    if statement not in prepared:
        numbered = sql % tuple(f"${n}" for n in range(1, len(params) + 1))
        cursor.execute(f"PREPARE {statement} AS {numbered}")
        prepared.add(statement)
    return f"EXECUTE {statement}({', '.join(['%s'] * len(params))})"


@functools.lru_cache(maxsize=64)
def _statement_name(name: str, sql: str) -> str:
    """``name`` and a hash of ``sql``: hashed once per text, not on every call."""
    return f"{name}_{hashlib.sha256(sql.encode()).hexdigest()[:12]}"


def prepared_statements_forget(
    sender: object, connection: BaseDatabaseWrapper, **kwargs: Any
) -> None:
    """``connection_created``: a new database session holds no prepared statement yet."""
    _prepared.pop(connection, None)
