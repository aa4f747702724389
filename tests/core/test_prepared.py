"""core.db.execute_prepared: a hot statement planned once per database session."""

from __future__ import annotations

import pytest
from django.db import connection

from core.db import execute_prepared, prepared_sql

pytestmark = pytest.mark.django_db

SUM = "SELECT CAST(%s AS integer) + CAST(%s AS integer)"


def run(sql: str, params: list[object], *, name: str = "test_sum") -> object:
    with connection.cursor() as cursor:
        execute_prepared(cursor, sql, params, name=name)
        return cursor.fetchone()[0]


def session_statements(prefix: str) -> list[str]:
    """The prepared statements the current PostgreSQL session holds under ``prefix``."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name FROM pg_prepared_statements WHERE name LIKE %s ORDER BY name",
            [f"{prefix}%"],
        )
        return [name for (name,) in cursor.fetchall()]


def test_the_statement_runs_with_each_calls_values():
    """On every database (SQLite: a plain execute)."""
    assert run(SUM, [1, 2]) == 3
    assert run(SUM, [40, 2]) == 42


@pytest.mark.postgres
def test_a_statement_is_prepared_once_per_session():
    assert run(SUM, [1, 2], name="test_once") == 3
    assert run(SUM, [5, 5], name="test_once") == 10
    assert len(session_statements("test_once")) == 1


@pytest.mark.postgres
def test_another_text_under_the_same_name_is_another_statement():
    assert run(SUM, [1, 2], name="test_text") == 3
    assert run("SELECT CAST(%s AS integer) * CAST(%s AS integer)", [3, 4], name="test_text") == 12
    assert len(session_statements("test_text")) == 2


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_new_session_prepares_it_again():
    """A reconnect (a recycled connection, a restarted server) starts a session without the
    statement: the next call prepares it there instead of executing a name it lacks."""
    assert run(SUM, [1, 2], name="test_again") == 3
    connection.close()
    assert session_statements("test_again") == []  # the new session's own view
    assert run(SUM, [2, 2], name="test_again") == 4
    assert len(session_statements("test_again")) == 1


@pytest.mark.postgres
def test_turned_off_nothing_is_prepared(settings):
    """``DATABASE_PREPARED_STATEMENTS=false``, as behind a pooler in transaction mode."""
    settings.DATABASE_PREPARED_STATEMENTS = False
    assert run(SUM, [1, 2], name="test_off") == 3
    assert session_statements("test_off") == []


@pytest.mark.django_db(transaction=True)
def test_prepared_text_runs_through_raw_also_first_thing_in_a_new_session(django_user_model):
    """``prepared_sql`` gives ``Model.objects.raw`` its text; asked right after a reconnect, it
    prepares in the new session, where the query then runs."""
    user = django_user_model.objects.create(email="prepared@example.com")
    sql = f"SELECT * FROM {django_user_model._meta.db_table} WHERE email = %s"
    connection.close()
    for _ in range(2):
        text = prepared_sql(sql, [user.email], name="test_raw")
        assert [u.pk for u in django_user_model.objects.raw(text, [user.email])] == [user.pk]
    if connection.vendor == "postgresql":
        assert len(session_statements("test_raw")) == 1
