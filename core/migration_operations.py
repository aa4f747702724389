"""Migration operations every app may use: indexes built and dropped without blocking writes.

On PostgreSQL ``AddIndexOnline`` / ``RemoveIndexOnline`` run ``CREATE/DROP INDEX CONCURRENTLY``,
and ``AddConstraintOnline`` / ``RemoveConstraintOnline`` the same for a unique constraint that
PostgreSQL keeps as a unique index (one with a condition or expressions), so a deploy on a big
database does not block writes for the minutes a build takes (the migration using them must set
``atomic = False``); elsewhere (SQLite) they are ``AddIndex`` / ``RemoveIndex`` /
``AddConstraint`` / ``RemoveConstraint``. A concurrent build that fails leaves an INVALID index
behind: drop it and run ``migrate`` again. To replace a unique constraint, add the new one
before removing the old: rows are checked by one or the other throughout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import migrations, models

if TYPE_CHECKING:
    from django.db.backends.base.schema import BaseDatabaseSchemaEditor
    from django.db.migrations.state import ProjectState


def _concurrently(schema_editor: BaseDatabaseSchemaEditor) -> dict[str, bool]:
    return {"concurrently": True} if schema_editor.connection.vendor == "postgresql" else {}


class AddIndexOnline(migrations.AddIndex):
    """``AddIndex``, built ``CONCURRENTLY`` on PostgreSQL."""

    def database_forwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            schema_editor.add_index(model, self.index, **_concurrently(schema_editor))

    def database_backwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        model = from_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            schema_editor.remove_index(model, self.index, **_concurrently(schema_editor))


class RemoveIndexOnline(migrations.RemoveIndex):
    """``RemoveIndex``, dropped ``CONCURRENTLY`` on PostgreSQL."""

    def database_forwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        model = from_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            index = from_state.models[app_label, self.model_name_lower].get_index_by_name(self.name)
            schema_editor.remove_index(model, index, **_concurrently(schema_editor))

    def database_backwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            index = to_state.models[app_label, self.model_name_lower].get_index_by_name(self.name)
            schema_editor.add_index(model, index, **_concurrently(schema_editor))


def _index_backed(constraint: models.BaseConstraint) -> models.UniqueConstraint:
    if not (
        isinstance(constraint, models.UniqueConstraint)
        and (constraint.condition is not None or constraint.expressions)
    ):
        raise ValueError(
            f"{constraint.name}: only a unique constraint with a condition or expressions is "
            "an index PostgreSQL can build concurrently"
        )
    return constraint


def _with_concurrently(sql: object, statement: str) -> str:
    """``sql`` (a constraint's own SQL, starting with ``statement``) run ``CONCURRENTLY``."""
    text = str(sql)
    if not text.startswith(f"{statement} "):
        raise ValueError(f"expected {statement}: {text}")
    return text.replace(statement, f"{statement} CONCURRENTLY", 1)


class AddConstraintOnline(migrations.AddConstraint):
    """``AddConstraint`` of a unique constraint with a condition or expressions, its unique
    index built ``CONCURRENTLY`` on PostgreSQL (the constraint's own SQL, from its
    ``create_sql``)."""

    def __init__(self, model_name: str, constraint: models.BaseConstraint) -> None:
        super().__init__(model_name, _index_backed(constraint))

    def database_forwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return
        _add_online(schema_editor, model, _index_backed(self.constraint))

    def database_backwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return
        _remove_online(schema_editor, model, _index_backed(self.constraint))


class RemoveConstraintOnline(migrations.RemoveConstraint):
    """``RemoveConstraint`` of a unique constraint with a condition or expressions, its unique
    index dropped ``CONCURRENTLY`` on PostgreSQL (and built so when migrating back)."""

    def database_forwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return
        state = from_state.models[app_label, self.model_name_lower]
        _remove_online(schema_editor, model, _index_backed(state.get_constraint_by_name(self.name)))

    def database_backwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return
        state = to_state.models[app_label, self.model_name_lower]
        _add_online(schema_editor, model, _index_backed(state.get_constraint_by_name(self.name)))


def _add_online(
    schema_editor: BaseDatabaseSchemaEditor,
    model: type[models.Model],
    constraint: models.UniqueConstraint,
) -> None:
    if schema_editor.connection.vendor != "postgresql":
        schema_editor.add_constraint(model, constraint)
        return
    sql = constraint.create_sql(model, schema_editor)
    schema_editor.execute(_with_concurrently(sql, "CREATE UNIQUE INDEX"), params=None)


def _remove_online(
    schema_editor: BaseDatabaseSchemaEditor,
    model: type[models.Model],
    constraint: models.UniqueConstraint,
) -> None:
    if schema_editor.connection.vendor != "postgresql":
        schema_editor.remove_constraint(model, constraint)
        return
    sql = constraint.remove_sql(model, schema_editor)
    schema_editor.execute(_with_concurrently(sql, "DROP INDEX"), params=None)
