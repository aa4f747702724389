"""core.db: housekeeping deletes in bounded transactions; the helpers of fenced statements (their
text, column lists and rows of several models); a hot statement planned once per database session
(execute_prepared)."""

from __future__ import annotations

import math

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import User
from core.db import (
    ModelsRow,
    assignments,
    columns,
    delete_in_batches,
    execute_prepared,
    fields,
    prepared_sql,
    sql_text,
    table,
)
from core.models import RateLimitCounter
from reviews.models import Contact
from tests.factories import ContactFactory
from tests.support.row_counts import statement_row_counts

pytestmark = pytest.mark.django_db


def make_counters(expired: int, live: int) -> None:
    RateLimitCounter.objects.bulk_create(
        [RateLimitCounter(key=f"old-{i}", count=1, reset_at=100) for i in range(expired)]
        + [RateLimitCounter(key=f"live-{i}", count=1, reset_at=10**10) for i in range(live)]
    )


def test_a_purge_of_more_rows_than_a_batch_deletes_them_all_and_only_them():
    make_counters(expired=23, live=5)
    with statement_row_counts() as counts:
        result = delete_in_batches(RateLimitCounter.objects.filter(reset_at__lte=200), batch_size=4)
    assert result == (23, {"core.RateLimitCounter": 23})
    assert sorted(RateLimitCounter.objects.values_list("key", flat=True)) == [
        f"live-{i}" for i in range(5)
    ]
    # No statement touched more than one batch of rows.
    assert max(counts) == 4


@pytest.mark.parametrize("expired", [0, 4, 9])
def test_queries_per_batch_are_bounded(expired):
    make_counters(expired=expired, live=1)
    with CaptureQueriesContext(connection) as queries:
        delete_in_batches(RateLimitCounter.objects.filter(reset_at__lte=200), batch_size=4)
    # A full batch is one more round (the loop stops at the first short one); each round is a
    # SELECT of primary keys, a DELETE, and the transaction's savepoint and release.
    rounds = math.floor(expired / 4) + 1
    assert len(queries) <= 4 * rounds
    assert RateLimitCounter.objects.count() == 1


def test_the_default_batch_is_the_setting(settings):
    settings.PURGE_BATCH_SIZE = 3
    make_counters(expired=7, live=0)
    with statement_row_counts() as counts:
        assert delete_in_batches(RateLimitCounter.objects.all())[0] == 7
    assert max(counts) == 3
    assert not RateLimitCounter.objects.exists()


def test_a_batch_size_below_one_is_refused():
    with pytest.raises(ValueError):
        delete_in_batches(RateLimitCounter.objects.all(), batch_size=0)


def _fields(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def test_the_text_is_the_literal_with_its_parts_filled_in():
    template = """
    SELECT {columns}
    FROM {table}
    WHERE id = %s
    """
    text = sql_text(template, columns="a, b", table='"t"')
    assert text == 'SELECT a, b\n    FROM "t"\n    WHERE id = %s'


def test_a_percent_other_than_a_placeholder_is_refused():
    """``prepared_sql`` numbers the placeholders with ``%``: a literal ``%`` would break it."""
    with pytest.raises(ValueError, match="%"):
        sql_text("SELECT * FROM {table} WHERE email LIKE '%@example.com'", table='"t"')


def test_column_lists_are_quoted_read_from_an_alias_and_renamed():
    selected = [f for f in fields(Contact) if f.name in ("id", "email")]
    assert columns(selected) == '"id", "email"'
    assert columns(selected, "c", as_prefix="c_") == 'c."id" AS "c_id", c."email" AS "c_email"'
    assert columns(selected, "locked", prefix="c_") == 'locked."c_id", locked."c_email"'
    assert assignments(selected) == '"id" = %s, "email" = %s'
    assert table(Contact) == '"reviews_contact"'


def test_fields_leave_the_json_ones_out_when_asked():
    assert "metadata" in [f.name for f in fields(Contact)]
    assert "metadata" not in [f.name for f in fields(Contact, json=False)]
    assert [f.name for f in fields(Contact)] == [f.name for f in Contact._meta.concrete_fields]


@pytest.mark.postgres  # psycopg returns each value as the model holds it; sqlite3 does not
def test_a_row_of_two_models_loads_each_as_the_orm_does():
    contact = ContactFactory(metadata={"order": "A-1"})
    row_of = ModelsRow(Contact, User, json=False)
    sql = sql_text(
        """
        SELECT {contact_columns}, {owner_columns}
        FROM {contact} c JOIN {user} u ON u.id = c.owner_id
        WHERE c.id = %s
        """,
        contact=table(Contact),
        user=table(User),
        contact_columns=row_of.columns(Contact, "c"),
        owner_columns=row_of.columns(User, "u"),
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [Contact._meta.pk.get_db_prep_value(contact.pk, connection)])
        row = cursor.fetchone()

    loaded = row_of.load(Contact, row)
    owner = row_of.load(User, row)
    assert "metadata" in loaded.get_deferred_fields()  # left out of the row: loaded on access
    assert _fields(loaded) == _fields(Contact.objects.get(pk=contact.pk))
    assert _fields(owner) == _fields(User.objects.get(pk=contact.owner_id))
    assert not loaded._state.adding and loaded._state.db == "default"


def test_a_model_appears_once_in_a_row():
    with pytest.raises(ValueError):
        ModelsRow(Contact, Contact)


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
