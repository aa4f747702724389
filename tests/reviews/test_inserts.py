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
