"""Database helpers shared by every app: bounded housekeeping deletes, and for the hand-written
("fenced") SQL on a hot path: its text, the generated parts of that text (tables, column
lists), the models of a result row, and its statements prepared once per database session;
``serial_plans`` for small reads PostgreSQL would hand to parallel workers.

A fenced statement is a literal, read top to bottom, with ``%s`` for each parameter and
``{name}`` for each part generated from the models (a quoted table, a column list); ``sql_text``
fills those in, once per process (the caller caches it). Its ORM twin sits beside it, and a
test runs both on the same rows."""

from __future__ import annotations

import functools
import hashlib
import weakref
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models import Field, JSONField, Model, QuerySet

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.db.backends.utils import CursorWrapper

# The statements ``execute_prepared`` has prepared in each connection's current database
# session (a prepared statement lives as long as its session; ``connection_created`` starts
# a new one).
_prepared: weakref.WeakKeyDictionary[BaseDatabaseWrapper, set[str]] = weakref.WeakKeyDictionary()

M = TypeVar("M", bound=Model)


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


def sql_text(template: str, /, **parts: str) -> str:
    """A fenced statement's text: ``template``, a literal with ``%s`` for each parameter and
    ``{name}`` for each generated part, with ``parts`` filled in and its surrounding blank lines
    dropped. Call it once per process (``functools.cache`` on the function that builds it): the
    hot path then pays nothing for formatting.

    The text may hold no other ``%``: ``prepared_sql`` numbers the placeholders with ``%``."""
    text = template.format(**parts).strip()
    if "%" in text.replace("%s", ""):
        raise ValueError(f"a fenced statement holds a % other than its placeholders: {text}")
    return text


def table(model: type[Model]) -> str:
    """The model's table, quoted: a statement's ``{table}`` part."""
    return connections[DEFAULT_DB_ALIAS].ops.quote_name(model._meta.db_table)


def column(field: Field[Any, Any]) -> str:
    """A concrete field's column (``Field.column`` is typed optional for the others)."""
    assert field.column is not None
    return field.column


def fields(model: type[Model], *, json: bool = True) -> tuple[Field[Any, Any], ...]:
    """The model's concrete fields in their declared order (the order of ``SELECT *`` and of
    ``Model.from_db``), without the JSON ones when ``json`` is false: a JSON column is the one
    type here that psycopg does not return as the model holds it (the ORM decodes it in the
    field's ``from_db_value``, which a raw row skips), so a statement leaves it to load on
    access (``Model.from_db`` defers it)."""
    concrete: Iterable[Field[Any, Any]] = model._meta.concrete_fields
    return tuple(f for f in concrete if json or not isinstance(f, JSONField))


def columns(
    of: Iterable[Field[Any, Any]], alias: str = "", *, prefix: str = "", as_prefix: str = ""
) -> str:
    """A statement's column list for the fields ``of``, comma-separated: each column quoted,
    read from ``alias`` (``alias."<prefix><column>"``) and, with ``as_prefix``, renamed
    (``AS "<as_prefix><column>"``, for a CTE joining two tables whose columns share names)."""
    qn = connections[DEFAULT_DB_ALIAS].ops.quote_name
    source = f"{alias}." if alias else ""
    return ", ".join(
        f"{source}{qn(prefix + column(f))}"
        + (f" AS {qn(as_prefix + column(f))}" if as_prefix else "")
        for f in of
    )


def assignments(of: Iterable[Field[Any, Any]]) -> str:
    """An ``UPDATE``'s ``SET`` list for the fields ``of``: ``"<column>" = %s`` each, in order."""
    qn = connections[DEFAULT_DB_ALIAS].ops.quote_name
    return ", ".join(f"{qn(column(f))} = %s" for f in of)


class ModelsRow:
    """The result row of a fenced statement that selects several models side by side: each
    model's ``fields`` (every concrete one; not the JSON ones with ``json=False``), in the order
    the models are given. Its ``columns`` fill the statement's select list; ``load`` builds one
    model's instance from its part of a row, as the ORM would (``Model.from_db``), instead of
    slicing the row by position at each call site."""

    def __init__(self, *models: type[Model], json: bool = True) -> None:
        if len(set(models)) != len(models):
            raise ValueError("a model appears once in a row")
        self.models = models
        self.json = json

    @functools.cached_property
    def _parts(self) -> dict[type[Model], tuple[tuple[Field[Any, Any], ...], slice, list[str]]]:
        """Per model: its fields, their place in the row, their attribute names. Built on first
        use, once the models are loaded, and kept."""
        parts = {}
        start = 0
        for model in self.models:
            selected = fields(model, json=self.json)
            end = start + len(selected)
            parts[model] = (selected, slice(start, end), [f.attname for f in selected])
            start = end
        return parts

    def fields(self, model: type[Model]) -> tuple[Field[Any, Any], ...]:
        return self._parts[model][0]

    def columns(
        self, model: type[Model], alias: str = "", *, prefix: str = "", as_prefix: str = ""
    ) -> str:
        """``model``'s part of the select list (``columns``): give the models' parts in the
        row's order."""
        return columns(self.fields(model), alias, prefix=prefix, as_prefix=as_prefix)

    def load(self, model: type[M], row: Sequence[Any], *, using: str = DEFAULT_DB_ALIAS) -> M:
        """The ``model`` instance of ``row``, loaded from ``using`` (the fields left out
        deferred). The values go in as the driver returned them, without the fields'
        ``from_db_value``: what psycopg returns for every field type but JSON."""
        _, place, names = self._parts[model]
        return model.from_db(using, names, row[place])


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
    execution or more (``pg_stat_statements``): the send path's claim and outcome, and the API
    write's key claim and stored response, dedup lock, contact match and insert (what planning
    cost them and what preparing gained: docs/benchmarks.md, Optimisations kept).

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


@contextmanager
def serial_plans(using: str = DEFAULT_DB_ALIAS) -> Iterator[None]:
    """Plan the statements run inside without parallel workers (PostgreSQL: ``SET LOCAL
    max_parallel_workers_per_gather = 0``, in a transaction; other databases: nothing).

    For a read of a few indexed ranges that PostgreSQL costs high enough to start workers for
    (a ``Gather`` over a ``Parallel Append``): starting and stopping two workers took ~10 ms
    where the read itself took 1-2 ms (the dashboard's funnel at a location, docs/benchmarks.md
    "Teams and locations (issue 37)"). One statement more (the ``SET``); inside a transaction
    already, one more again to put the setting back (``SET LOCAL`` lasts to its end)."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        yield
        return
    nested = connection.in_atomic_block
    with transaction.atomic(using=using, savepoint=False):
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        yield
        if nested:
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL max_parallel_workers_per_gather TO DEFAULT")
