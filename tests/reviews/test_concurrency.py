"""Concurrent adds of one person converge on one contact and one request (PostgreSQL).

Real threads, each with its own database connection, released together by a barrier, through
the service and through HTTP with a real bearer token. No error is acceptable: every add either
creates the request or finds it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection
from rest_framework.test import APIClient

from connector_api.models import IdempotencyKey
from reviews.models import BusinessSettings, Contact, Message, ReviewRequest
from reviews.services import contact_add
from tests.support.contacts import contact_input
from tests.support.oauth import issue_tokens

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

THREADS = 20
PHONE_FORMATS = [
    "+14155552671",
    "(415) 555-2671",
    "415.555.2671",
    "415-555-2671",
    "4155552671",
    "1 415 555 2671",
    "+1 415 555 2671",
    "+1 (415) 555-2671",
    "001 415 555 2671",
    "011 1 415 555 2671",
]


def run_together(work: Callable[[int], object], n: int = THREADS) -> list[object]:
    """Run ``work(i)`` in ``n`` threads started at once; return results (or the exceptions)."""
    barrier = threading.Barrier(n)
    results: list[object] = [None] * n

    def target(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = work(i)
        except Exception as exc:  # collected and asserted on below
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    return results


def assert_one_contact_one_request(results: list[object]) -> None:
    errors = [r for r in results if isinstance(r, BaseException)]
    assert errors == []
    assert Contact.objects.count() == 1
    assert ReviewRequest.objects.count() == 1
    assert Message.objects.count() == 3


@pytest.fixture
def settings_row(owner):
    return BusinessSettings.for_owner(owner)


def test_twenty_concurrent_adds_of_one_email_make_one_contact_and_one_request(owner, settings_row):
    results = run_together(
        lambda i: contact_add(
            owner=owner,
            data=contact_input(
                owner, {"email": f"  Jane@Example.COM{' ' * (i % 3)}", "first_name": "J"}
            ),
        )
    )
    assert_one_contact_one_request(results)
    assert sum(r.created for r in results) == 1
    assert {r.review_request.pk for r in results} == {ReviewRequest.objects.get().pk}


def test_twenty_concurrent_adds_of_one_phone_in_different_formats_converge(owner, settings_row):
    results = run_together(
        lambda i: contact_add(
            owner=owner,
            data=contact_input(
                owner, {"mobile_phone_number": PHONE_FORMATS[i % len(PHONE_FORMATS)]}
            ),
        )
    )
    assert_one_contact_one_request(results)
    assert Contact.objects.get().phone == "+14155552671"
    assert sum(r.created for r in results) == 1


def _clients(owner, n: int) -> list[APIClient]:
    access, _ = issue_tokens(owner, scope="write")
    clients = []
    for _ in range(n):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
        clients.append(client)
    return clients


def test_twenty_concurrent_posts_of_one_email_answer_one_201_and_nineteen_200(owner, settings_row):
    clients = _clients(owner, THREADS)
    results = run_together(
        lambda i: clients[i].post(
            "/api/zapier/send-review-request",
            {"email": "jane@example.com", "mobile_phone_number": PHONE_FORMATS[i % 10]},
            format="json",
        )
    )
    assert_one_contact_one_request(results)
    statuses = sorted(r.status_code for r in results)
    assert statuses == [200] * (THREADS - 1) + [201]
    assert len({r.json()["id"] for r in results}) == 1


def test_concurrent_retries_with_one_idempotency_key_run_the_work_once(owner, settings_row):
    clients = _clients(owner, 10)
    results = run_together(
        lambda i: clients[i].post(
            "/api/zapier/send-review-request",
            {"email": "jane@example.com"},
            format="json",
            HTTP_IDEMPOTENCY_KEY="zap-run-42",
        ),
        n=10,
    )
    assert [r for r in results if isinstance(r, BaseException)] == []
    statuses = [r.status_code for r in results]
    # One ran it; the others saw it running (409) or finished (a 201 replay).
    assert set(statuses) <= {201, 409}
    assert sum(1 for r in results if r.status_code == 201 and "Idempotent-Replayed" not in r) == 1
    assert ReviewRequest.objects.count() == 1
    assert IdempotencyKey.objects.get().state == IdempotencyKey.State.DONE


def test_without_the_advisory_locks_the_unique_constraints_still_converge(
    owner, settings_row, monkeypatch
):
    # A writer that bypassed the locks: the constraints fire and the losers run again.
    monkeypatch.setattr("reviews.db.contact_add_lock", lambda **kwargs: None)
    results = run_together(
        lambda i: contact_add(
            owner=owner, data=contact_input(owner, {"email": "jane@example.com"})
        ),
        n=10,
    )
    errors = [r for r in results if isinstance(r, BaseException)]
    assert errors == []
    assert Contact.objects.count() == 1
    assert ReviewRequest.objects.count() == 1


def test_with_the_advisory_locks_no_add_needs_the_constraint_backstop(
    owner, settings_row, monkeypatch
):
    """The match sees what the lock holder committed (its own snapshot, taken after the locks
    are granted), so no add inserts a duplicate that a unique constraint has to refuse and
    send round again: one match per add."""
    from reviews import db

    runs = []
    original = db.contacts_matching

    def counted(**kwargs):
        runs.append(1)
        return original(**kwargs)

    monkeypatch.setattr(db, "contacts_matching", counted)
    results = run_together(
        lambda i: contact_add(
            owner=owner,
            data=contact_input(
                owner, {"email": "jane@example.com", "mobile_phone_number": PHONE_FORMATS[i % 10]}
            ),
        )
    )
    assert_one_contact_one_request(results)
    assert len(runs) == THREADS  # one run each: no IntegrityError, no second run
