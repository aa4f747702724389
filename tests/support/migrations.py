"""Moving a test's database to an earlier migration, and back to the latest, for the tests of a
data migration (run forwards from the migration before it, on rows as the code then stored
them) or of its way back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate(targets):
    """Migrate to ``targets``; the historical apps there."""
    MigrationExecutor(connection).migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


def migrate_to_latest() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@contextmanager
def migrated_to(targets) -> Iterator:
    """The historical apps at ``targets``; the latest schema again afterwards, whatever the
    test did (the next test, and the database's flush, expect it)."""
    try:
        yield migrate(targets)
    finally:
        migrate_to_latest()
