"""core.migration_operations: a unique constraint kept as an index, built and dropped without
blocking writes on PostgreSQL, and as usual elsewhere."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, models, transaction
from django.db.migrations.state import ModelState, ProjectState

from core.migration_operations import AddConstraintOnline, RemoveConstraintOnline

ONE_OPEN = models.UniqueConstraint(
    "name", condition=models.Q(open=True), name="core_ops_thing_one_open"
)


def _state(*constraints) -> ProjectState:
    state = ProjectState()
    state.add_model(
        ModelState(
            "core",
            "OpsThing",
            [
                ("id", models.BigAutoField(primary_key=True)),
                ("name", models.CharField(max_length=20)),
                ("open", models.BooleanField(default=True)),
            ],
            {"constraints": list(constraints), "db_table": "core_ops_thing"},
        )
    )
    return state


def test_only_a_constraint_kept_as_an_index_is_accepted():
    with pytest.raises(ValueError, match="only a unique constraint"):
        AddConstraintOnline(
            "opsthing", models.UniqueConstraint(fields=["name"], name="core_ops_plain")
        )
    with pytest.raises(ValueError, match="only a unique constraint"):
        AddConstraintOnline(
            "opsthing", models.CheckConstraint(condition=models.Q(open=True), name="core_ops_c")
        )


@pytest.mark.django_db(transaction=True)
def test_the_constraint_is_added_enforced_and_removed():
    before, after = _state(), _state(ONE_OPEN)
    add = AddConstraintOnline("opsthing", ONE_OPEN)
    remove = RemoveConstraintOnline("opsthing", ONE_OPEN.name)
    with connection.schema_editor(atomic=False) as editor:
        editor.create_model(before.apps.get_model("core", "OpsThing"))
    try:
        with connection.schema_editor(atomic=False, collect_sql=False) as editor:
            add.database_forwards("core", editor, before, after)
        names = connection.introspection.get_constraints(connection.cursor(), "core_ops_thing")
        assert ONE_OPEN.name in names
        Thing = after.apps.get_model("core", "OpsThing")
        Thing.objects.create(name="a", open=False)
        Thing.objects.create(name="a", open=False)
        Thing.objects.create(name="a")
        with pytest.raises(IntegrityError), transaction.atomic():
            Thing.objects.create(name="a")
        with connection.schema_editor(atomic=False) as editor:
            remove.database_forwards("core", editor, after, before)
        names = connection.introspection.get_constraints(connection.cursor(), "core_ops_thing")
        assert ONE_OPEN.name not in names
        with connection.schema_editor(atomic=False) as editor:
            remove.database_backwards("core", editor, before, after)
            add.database_backwards("core", editor, before, after)
        names = connection.introspection.get_constraints(connection.cursor(), "core_ops_thing")
        assert ONE_OPEN.name not in names
    finally:
        with connection.schema_editor(atomic=False) as editor:
            editor.delete_model(before.apps.get_model("core", "OpsThing"))


@pytest.mark.django_db
def test_on_postgresql_the_index_is_built_and_dropped_concurrently():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (set DATABASE_URL; CI does)")
    state = _state(ONE_OPEN)
    with connection.schema_editor(collect_sql=True, atomic=False) as editor:
        AddConstraintOnline("opsthing", ONE_OPEN).database_forwards("core", editor, _state(), state)
        RemoveConstraintOnline("opsthing", ONE_OPEN.name).database_forwards(
            "core", editor, state, _state()
        )
    assert editor.collected_sql[0].startswith(
        'CREATE UNIQUE INDEX CONCURRENTLY "core_ops_thing_one_open" ON "core_ops_thing"'
    )
    assert editor.collected_sql[1].startswith(
        'DROP INDEX CONCURRENTLY IF EXISTS "core_ops_thing_one_open"'
    )
