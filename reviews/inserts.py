"""Inserting the rows of a new review request in one statement (the API's write path).

``add_contact`` creates up to five rows for a new person: the contact, the request and its
messages. Saved one by one through the ORM that is three INSERTs, and most of the endpoint's
CPU went into building them (docs/benchmarks.md). Every one of these models takes its primary
key from Python (``uuid4``), so no row waits for another's id: on PostgreSQL they go in as one
statement, a chain of data-modifying CTEs (foreign keys are checked at the end of the
statement, so a request may reference a contact inserted beside it). Elsewhere (SQLite, the
embedded default), one ``bulk_create`` per model.

Like ``save()``, each field's ``pre_save`` runs (``auto_now``/``auto_now_add``) and every value
is converted by its field; unlike it, no model signal is sent (none is connected to these
models: ``add_contact`` is their only creator of this kind).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection, models


def insert_together(*groups: Sequence[models.Model]) -> None:
    """Insert the unsaved instances, model by model in the given order, in one statement."""
    groups = tuple(rows for rows in groups if rows)
    if not groups:
        return
    for rows in groups:
        for obj in rows:
            if obj.pk is None:
                raise ValueError(f"{obj!r} needs its primary key set before the insert")
    if connection.vendor != "postgresql":
        for rows in groups:
            type(rows[0]).objects.bulk_create(rows)
        return
    qn = connection.ops.quote_name
    statements: list[str] = []
    params: list = []
    for rows in groups:
        meta = type(rows[0])._meta
        fields = list(meta.concrete_fields)
        placeholders = "(" + ", ".join(["%s"] * len(fields)) + ")"
        for obj in rows:
            params += [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields]
        statements.append(
            f"INSERT INTO {qn(meta.db_table)} ({', '.join(qn(f.column) for f in fields)}) "
            f"VALUES {', '.join([placeholders] * len(rows))}"
        )
    *ctes, last = statements
    sql = "".join(
        ("WITH " if n == 0 else ", ") + f"{qn(f'insert_{n}')} AS ({cte})"
        for n, cte in enumerate(ctes)
    )
    with connection.cursor() as cursor:
        cursor.execute(f"{sql} {last}".strip(), params)
    for rows in groups:
        for obj in rows:
            obj._state.adding = False
            obj._state.db = connection.alias
