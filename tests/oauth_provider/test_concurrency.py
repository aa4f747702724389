"""Races at the token endpoint, on real PostgreSQL row locks and real concurrent connections.

Each test holds the row the requests contend for, starts the requests in threads (each with its
own database connection), waits until PostgreSQL shows them all waiting for that lock, and then
lets go: every request has passed validation before any of them writes, which is the worst case.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection, connections, transaction
from oauth2_provider.models import get_grant_model

from oauth_provider import views
from oauth_provider.models import Connection
from tests.oauth_provider.conftest import OAuthFlow

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def waiting_for_locks() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            """
            SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE NOT l.granted AND a.datname = current_database()
            """
        )
        return cursor.fetchone()[0]


def wait_until_blocked(count: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while waiting_for_locks() < count:
        assert time.monotonic() < deadline, "the requests never reached the row lock"
        time.sleep(0.05)


def in_threads(*calls):
    """Run each call in its own thread with its own connection; return their results in order."""

    def run(call):
        try:
            return call()
        finally:
            connections.close_all()

    pool = ThreadPoolExecutor(max_workers=len(calls))
    return pool, [pool.submit(run, call) for call in calls]


def test_two_concurrent_refreshes_of_one_token_both_succeed(owner, application):
    flow = OAuthFlow(owner, application)
    tokens = flow.connect()
    family = Connection.objects.get().pk

    with transaction.atomic():
        Connection.objects.select_for_update().get(pk=family)
        pool, futures = in_threads(
            lambda: OAuthFlow(owner, application).refresh(tokens.refresh_token),
            lambda: OAuthFlow(owner, application).refresh(tokens.refresh_token),
        )
        wait_until_blocked(2)
    responses = [future.result(timeout=60) for future in futures]
    pool.shutdown()

    assert [r.status_code for r in responses] == [200, 200], [r.content for r in responses]
    pairs = [r.json() for r in responses]
    assert pairs[0]["refresh_token"] != pairs[1]["refresh_token"]
    for pair in pairs:
        assert flow.api(pair["access_token"]).get("/api/zapier/me").status_code == 200
        assert flow.refresh(pair["refresh_token"]).status_code == 200


def test_a_code_is_single_use_under_two_concurrent_redemptions(owner, application):
    flow = OAuthFlow(owner, application)
    code = flow.code()

    with transaction.atomic():
        get_grant_model().objects.select_for_update().get()
        pool, futures = in_threads(
            lambda: OAuthFlow(owner, application).exchange(code),
            lambda: OAuthFlow(owner, application).exchange(code),
        )
        wait_until_blocked(2)
    responses = sorted((f.result(timeout=60) for f in futures), key=lambda r: r.status_code)
    pool.shutdown()

    assert [r.status_code for r in responses] == [200, 400], [r.content for r in responses]
    assert responses[1].json()["error"] == "invalid_grant"
    # The second redemption is a replay: what the first one got is revoked too.
    issued = responses[0].json()
    assert flow.api(issued["access_token"]).get("/api/zapier/me").status_code == 401
    assert Connection.objects.count() == 1


def test_a_lock_wait_at_the_token_endpoint_is_503_with_retry_after(owner, application, monkeypatch):
    monkeypatch.setattr(views, "TOKEN_LOCK_TIMEOUT", "200ms")
    flow = OAuthFlow(owner, application)
    tokens = flow.connect()
    started = threading.Event()

    with transaction.atomic():
        Connection.objects.select_for_update().get()

        def refresh():
            started.set()
            return OAuthFlow(owner, application).refresh(tokens.refresh_token)

        pool, (future,) = in_threads(refresh)
        response = future.result(timeout=60)
    pool.shutdown()

    assert started.is_set()
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.json()["error"] == "temporarily_unavailable"
    # Nothing was spent: the same refresh token still works.
    assert flow.refresh(tokens.refresh_token).status_code == 200
