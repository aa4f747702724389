"""insert_together: the rows of a new request in one statement (PostgreSQL) or per model."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from reviews.inserts import insert_together
from reviews.models import Contact, PlannedStep, ReviewRequest, messages_for

pytestmark = pytest.mark.django_db


def new_rows(owner, email="jane@example.com"):
    contact = Contact(owner=owner, email=email, email_normalized=email, source="api")
    request = ReviewRequest(owner=owner, contact=contact, scheduled_for=timezone.now())
    steps = [PlannedStep(step=0, channel="email", offset=timedelta(0))]
    return contact, request, messages_for(request, steps, due_at=request.scheduled_for)


def test_insert_together_writes_every_row_like_save(owner):
    contact, request, messages = new_rows(owner)
    with CaptureQueriesContext(connection) as queries:
        insert_together([contact], [request], messages)
    inserts = [q for q in queries.captured_queries if "INSERT" in q["sql"]]
    assert len(inserts) == (1 if connection.vendor == "postgresql" else 3)
    stored = ReviewRequest.objects.select_related("contact").get(pk=request.pk)
    assert stored.contact.email == "jane@example.com"
    assert stored.token == request.token and stored.created_at is not None
    assert list(stored.messages.values_list("pk", flat=True)) == [messages[0].pk]
    assert not contact._state.adding and not request._state.adding


def test_insert_together_is_all_or_nothing(owner):
    first = new_rows(owner)
    insert_together([first[0]], [first[1]], first[2])
    contact, request, messages = new_rows(owner)  # the same e-mail: a unique constraint fires
    with pytest.raises(IntegrityError):
        insert_together([contact], [request], messages)


def test_insert_together_needs_primary_keys(owner):
    contact = Contact(owner=owner, email="a@example.com", source="api")
    contact.pk = None
    with pytest.raises(ValueError):
        insert_together([contact])


def test_insert_together_stores_every_value_exactly(owner):
    """Each column reads back as the instance held it: text with quotes, backslashes and
    non-ASCII, nested JSON, microsecond timestamps and intervals."""
    contact = Contact(
        owner=owner,
        first_name='Zoë "Z" O\'Brien \\ 東京',
        email="zoe@example.com",
        email_normalized="zoe@example.com",
        phone="+14155550123",
        metadata={"order": {"id": 7, "items": ["a", "b"]}, "note": "line\nbreak", "n": None},
        source="api",
    )
    request = ReviewRequest(
        owner=owner,
        contact=contact,
        scheduled_for=timezone.now().replace(microsecond=123456),
    )
    steps = [
        PlannedStep(step=0, channel="sms", offset=timedelta(0)),
        PlannedStep(step=1, channel="email", offset=timedelta(days=3, seconds=7, microseconds=5)),
    ]
    messages = messages_for(request, steps, due_at=request.scheduled_for)
    insert_together([contact], [request], messages)
    for obj in (contact, request, *messages):
        stored = type(obj).objects.get(pk=obj.pk)
        for field in type(obj)._meta.concrete_fields:
            assert getattr(stored, field.attname) == getattr(obj, field.attname), field.name


def test_insert_together_sends_one_short_statement_per_shape(owner):
    """The rows travel as one JSON parameter per model, so the statement text is the same for
    every request of one shape (psycopg caches its conversion) whatever the values."""
    if connection.vendor != "postgresql":
        pytest.skip("one statement on PostgreSQL only")
    executed = []

    def record(execute, sql, params, many, context):
        executed.append((sql, params))
        return execute(sql, params, many, context)

    for email in ("a@example.com", "b@example.com"):
        contact, request, messages = new_rows(owner, email=email)
        with connection.execute_wrapper(record):
            insert_together([contact], [request], messages)
    (first_sql, first_params), (second_sql, second_params) = executed
    assert first_sql == second_sql and "jsonb_populate_recordset" in first_sql
    assert len(first_params) == len(second_params) == 3  # one per model
    assert len(first_sql) <= 4096  # psycopg caches the conversion of statements up to 4 KiB
