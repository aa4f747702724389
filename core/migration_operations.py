"""Migration operations every app may use: indexes built and dropped without blocking writes.

On PostgreSQL ``AddIndexOnline`` / ``RemoveIndexOnline`` run ``CREATE/DROP INDEX CONCURRENTLY``
(the migration using them must set ``atomic = False``), so a deploy on a big database does not
block writes for the minutes a build takes; elsewhere (SQLite) they are ``AddIndex`` /
``RemoveIndex``. A concurrent build that fails leaves an INVALID index behind: drop it and run
``migrate`` again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import migrations

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
