"""core.db's helpers for fenced statements: their text, column lists and rows of several models."""

from __future__ import annotations

import pytest
from django.db import connection

from accounts.models import User
from core.db import ModelsRow, assignments, columns, fields, sql_text, table
from reviews.models import Contact
from tests.factories import ContactFactory

pytestmark = pytest.mark.django_db


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
