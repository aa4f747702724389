"""Empty the test database after a transactional test with DELETE, not TRUNCATE (PostgreSQL).

A test that commits (``transaction=True``, ``live_server``, the browser and process tests) ends
with Django's ``flush``: one ``TRUNCATE`` of every table. TRUNCATE gives each of the 40-odd
tables new files and takes an exclusive lock on all of them: 0.1-0.3 s on a quiet machine and
over a second on a busy one, paid by some 200 tests. After a test the tables hold a few rows,
and ``DELETE FROM`` each is ~10 ms for all of them.

The result is the same empty database, provided nothing reacts to a DELETE that a TRUNCATE
would not set off, and the order of the deletes does not matter. ``delete_is_equivalent`` checks
both on the test database when the session starts: every foreign key is ``DEFERRABLE INITIALLY
DEFERRED`` (Django creates them so on PostgreSQL; they are checked once, at the commit, when
every table is empty) and there is no trigger of the schema's own. Otherwise, and for a flush
that resets sequences or cascades to tables outside the list, Django's TRUNCATE is kept.
Sequences are not reset by either (Django's flush passes ``reset_sequences=False``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.db import connection


def delete_is_equivalent() -> bool:
    """Deleting every table's rows, in any order, in one transaction, is what TRUNCATE does:
    no foreign key checked before the commit, no trigger of the schema's own."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace"
            " WHERE c.contype = 'f' AND NOT (c.condeferrable AND c.condeferred)"
            " AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
        )
        (immediate_keys,) = cursor.fetchone()
        cursor.execute(
            "SELECT count(*) FROM pg_trigger t JOIN pg_class r ON r.oid = t.tgrelid"
            " JOIN pg_namespace n ON n.oid = r.relnamespace"
            " WHERE NOT t.tgisinternal AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
        )
        (triggers,) = cursor.fetchone()
    return immediate_keys == 0 and triggers == 0


@contextlib.contextmanager
def flush_by_delete() -> Iterator[bool]:
    """While open, PostgreSQL's ``sql_flush`` deletes rows instead of truncating tables (when
    ``delete_is_equivalent``); yields whether it does."""
    if not delete_is_equivalent():
        yield False
        return
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or allow_cascade or not tables:
            return truncate(
                self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
            )
        # execute_sql_flush runs these in one transaction: the deferred keys see empty tables.
        return [
            f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(table))};"
            for table in tables
        ]

    DatabaseOperations.sql_flush = sql_flush  # type: ignore[method-assign]  # for the session
    try:
        yield True
    finally:
        DatabaseOperations.sql_flush = truncate  # type: ignore[method-assign]  # Django's again
