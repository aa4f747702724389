"""The schema PostgreSQL really has after every migration (what the migrations built, not what
the models say)."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import connection

OUR_APPS = ("accounts", "reviews", "activity", "connector_api", "oauth_provider")


def _our_models() -> list:
    return [
        model
        for app in OUR_APPS
        for model in apps.get_app_config(app).get_models()
        if not model._meta.proxy
    ]


def _our_tables() -> list[str]:
    return [model._meta.db_table for model in _our_models()]


@pytest.mark.django_db
@pytest.mark.postgres
def test_no_index_of_ours_repeats_the_leading_columns_of_another():
    """Every index is written on each insert (and on each update that is not HOT): one whose
    columns lead another index of the same table serves no lookup the other does not.
    Django indexes each ForeignKey by itself, so a foreign key that leads a composite index
    is declared ``db_index=False`` (reviews 0004). A unique or partial index is not
    redundant this way (it enforces a rule, or covers other rows)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT a.indrelid::regclass::text, a.indexrelid::regclass::text,
                   b.indexrelid::regclass::text
            FROM pg_index a
            JOIN pg_index b ON b.indrelid = a.indrelid AND b.indexrelid <> a.indexrelid
            WHERE a.indrelid::regclass::text = ANY(%s)
              AND NOT a.indisunique AND a.indpred IS NULL
              AND (b.indkey::text LIKE a.indkey::text || ' %%'
                   OR (b.indkey::text = a.indkey::text AND b.indpred IS NULL
                       AND (b.indisunique OR b.indexrelid < a.indexrelid)))
              AND NOT EXISTS (SELECT 1 FROM pg_opclass o WHERE o.oid = ANY(a.indclass)
                              AND o.opcname LIKE '%%pattern_ops')
            ORDER BY 1, 2
            """,
            [_our_tables()],
        )
        redundant = cursor.fetchall()
    assert redundant == []


@pytest.mark.django_db
@pytest.mark.postgres
def test_the_review_requests_token_has_no_like_index_and_one_unique_constraint():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'reviews_reviewrequest' "
            "AND indexdef LIKE '%%(token%%'"
        )
        indexes = [name for (name,) in cursor.fetchall()]
    assert indexes == ["reviews_request_token_unique"]


@pytest.mark.django_db
@pytest.mark.postgres
def test_foreign_keys_left_without_their_own_index_still_lead_an_index():
    """The other half of the first test: dropping a foreign key's own index is only right
    while a composite index starts with that column (lookups and ON DELETE cascades)."""
    missing = []
    with connection.cursor() as cursor:
        for model in _our_models():
            table = model._meta.db_table
            leading = {
                index["columns"][0]
                for index in connection.introspection.get_constraints(cursor, table).values()
                if (index["index"] or index["unique"]) and index["columns"]
            }
            for field in model._meta.concrete_fields:
                if field.is_relation and field.many_to_one and field.column not in leading:
                    missing.append(f"{table}.{field.column}")
    assert missing == []


@pytest.mark.postgres
def test_the_new_unique_index_is_built_and_the_old_one_dropped_on_postgresql(db):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'reviews_reviewrequest'"
            " AND indexname LIKE 'reviews_request_one_active%%' OR indexname = "
            "'reviews_request_location_list'"
        )
        indexes = dict(cursor.fetchall())
    assert set(indexes) == {
        "reviews_request_one_active_per_contact_location",
        "reviews_request_location_list",
    }
    assert (
        "COALESCE(location_id, '00000000-0000-0000-0000-000000000000'::uuid)"
        in indexes["reviews_request_one_active_per_contact_location"]
    )


def test_the_requests_location_is_a_validated_foreign_key_after_the_migrations(db):
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, "reviews_reviewrequest")
        keys = [c["foreign_key"] for c in constraints.values() if c["columns"] == ["location_id"]]
        assert ("accounts_location", "id") in keys
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT bool_and(convalidated) FROM pg_constraint WHERE contype = 'f' "
                "AND conrelid = 'reviews_reviewrequest'::regclass "
                "AND confrelid = 'accounts_location'::regclass"
            )
            assert cursor.fetchone() == (True,)
