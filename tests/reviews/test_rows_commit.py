"""``rows.run(commit=True)``: the outermost transaction commits in its last round trip.

An API request's transaction (``add_contact``) ends with one query string: the new rows, the
stored response and, since only the outermost ``atomic()`` block may commit, ``COMMIT``. These
tests pin down when that ``COMMIT`` goes in the string and that the outcome is the block's
own: committed with the block, rolled back with it when a statement fails, never committed
on behalf of a caller's enclosing transaction.
"""

from __future__ import annotations

import psycopg
import pytest
from django.db import IntegrityError, connection, transaction
from django.test import TestCase
from django.test.utils import CaptureQueriesContext

from reviews import rows
from reviews.inserts import insert_together
from reviews.models import Contact, ReviewRequest
from tests.reviews.test_inserts import new_rows

pytestmark = pytest.mark.django_db(transaction=True)


def server_status() -> psycopg.pq.TransactionStatus:
    return connection.connection.pgconn.transaction_status


def seen_by_another_session(contact: Contact) -> bool:
    """Whether a second connection sees the row: whether it is committed."""
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params, autocommit=True) as other:
        found = other.execute("SELECT 1 FROM reviews_contact WHERE id = %s", [contact.pk])
        return found.fetchone() is not None


@pytest.mark.postgres
def test_the_outermost_block_commits_in_its_last_round_trip(owner):
    contact, request, messages = new_rows(owner)
    hooks = []
    with transaction.atomic():
        transaction.on_commit(lambda: hooks.append("after commit"))
        with CaptureQueriesContext(connection) as queries:
            insert_together([contact], [request], messages, commit=True)
        # The server committed in that round trip: nothing is left for the block's exit to send.
        assert queries.captured_queries[-1]["sql"].endswith("; COMMIT")
        assert server_status() == psycopg.pq.TransactionStatus.IDLE
        assert seen_by_another_session(contact)
        assert hooks == []  # on_commit hooks still run when the block exits
    assert hooks == ["after commit"]
    assert ReviewRequest.objects.get(pk=request.pk).contact_id == contact.pk


@pytest.mark.postgres
def test_a_failing_statement_commits_nothing(owner):
    first = new_rows(owner)
    insert_together([first[0]], [first[1]], first[2])
    contact, request, messages = new_rows(owner)  # the same e-mail: a unique constraint fires
    hooks = []
    with pytest.raises(IntegrityError), transaction.atomic():
        transaction.on_commit(lambda: hooks.append("after commit"))
        rows.run([("SELECT 1", [])])
        insert_together([contact], [request], messages, commit=True)
    assert hooks == []
    assert not seen_by_another_session(contact)
    assert server_status() == psycopg.pq.TransactionStatus.IDLE
    assert Contact.objects.count() == 1  # the connection is usable and holds only the first


@pytest.mark.parametrize("inner", ["savepoint", "no-savepoint"])
def test_inside_a_callers_transaction_nothing_is_committed_early(owner, inner):
    contact, request, messages = new_rows(owner)
    with pytest.raises(RuntimeError), transaction.atomic():
        with transaction.atomic(savepoint=inner == "savepoint"):
            assert not rows.commits_here()
            with CaptureQueriesContext(connection) as queries:
                insert_together([contact], [request], messages, commit=True)
        assert not any("COMMIT" in q["sql"] for q in queries.captured_queries)
        raise RuntimeError("the caller's transaction fails after the inner block")
    # The caller's rollback took the rows with it.
    assert not Contact.objects.filter(pk=contact.pk).exists()


def test_a_block_that_is_already_failing_does_not_commit():
    with transaction.atomic():
        assert rows.commits_here()
        transaction.set_rollback(True)
        assert not rows.commits_here()


def test_outside_postgresqls_query_strings_the_block_commits_on_exit(owner):
    """Statements run one by one (SQLite, or server-side binding): nothing is appended."""
    if rows.together():
        pytest.skip("statements share a query string on this database")
    contact, request, messages = new_rows(owner)
    with transaction.atomic():
        with CaptureQueriesContext(connection) as queries:
            insert_together([contact], [request], messages, commit=True)
        assert not any(q["sql"] == "COMMIT" for q in queries.captured_queries)
    assert Contact.objects.filter(pk=contact.pk).exists()


class TestInsideATestCase(TestCase):
    """A ``TestCase``'s own transaction is rolled back after the test: ``commit=True`` must
    never commit it, even for statements run directly in it."""

    def test_the_test_cases_block_is_not_committed(self):
        self.assertFalse(rows.commits_here())
        with CaptureQueriesContext(connection) as queries:
            rows.run([("SELECT 1", []), ("SELECT 2", [])], commit=True)
        self.assertFalse(any("COMMIT" in q["sql"] for q in queries.captured_queries))
