"""The request validator's rules (oauth_provider.validators): refresh rotation, the
parallel-refresh grace window, reuse detection, idle expiry and scope; and races at the token
endpoint on real PostgreSQL row locks and real concurrent connections.

In the race tests, each test holds the row the requests contend for, starts the requests in
threads (each with its own database connection), waits until PostgreSQL shows them all waiting
for that lock, and then lets go: every request has passed validation before any of them writes,
which is the worst case.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
import time_machine
from django.db import connection, connections, transaction
from django.utils import timezone
from oauth2_provider.models import get_grant_model, get_refresh_token_model

from oauth_provider import views
from oauth_provider.models import Connection
from tests.oauth_provider.conftest import TOKEN, OAuthFlow, post_form
from tests.support.oauth import CLIENT_SECRET, make_application

pytestmark = pytest.mark.django_db

RefreshToken = get_refresh_token_model()


def me(flow, access_token: str) -> int:
    return flow.api(access_token).get("/api/zapier/me").status_code


def test_refresh_rotates_both_tokens(flow):
    first = flow.connect()
    response = flow.refresh(first.refresh_token)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"access_token", "token_type", "expires_in", "refresh_token", "scope"}
    assert response["Cache-Control"] == "no-store"
    assert body["refresh_token"] != first.refresh_token
    assert body["access_token"] != first.access_token
    assert me(flow, body["access_token"]) == 200
    assert me(flow, first.access_token) == 401  # the old access token dies with its rotation
    # The new refresh token belongs to the same connection.
    assert RefreshToken.objects.filter(token_family=Connection.objects.get().pk).count() == 2


def test_rotated_token_presented_again_within_the_grace_window_gets_a_new_pair(flow):
    first = flow.connect()
    with time_machine.travel(timezone.now(), tick=False) as clock:
        a = flow.refresh(first.refresh_token).json()
        clock.shift(timedelta(seconds=59))
        b = flow.refresh(first.refresh_token).json()  # a parallel Zap run with the old token

    assert {a["access_token"], a["refresh_token"]}.isdisjoint(
        {b["access_token"], b["refresh_token"]}
    )
    # Both pairs work and the family is intact.
    assert me(flow, a["access_token"]) == 200
    assert me(flow, b["access_token"]) == 200
    assert flow.refresh(a["refresh_token"]).status_code == 200
    assert flow.refresh(b["refresh_token"]).status_code == 200


def test_rotated_token_replayed_after_the_grace_window_revokes_the_whole_family(flow):
    first = flow.connect()
    second = flow.refresh(first.refresh_token).json()
    with time_machine.travel(timezone.now() + timedelta(seconds=61)):
        replay = flow.refresh(first.refresh_token)
        assert replay.status_code == 400
        assert replay.json()["error"] == "invalid_grant"
        assert me(flow, second["access_token"]) == 401
        assert flow.refresh(second["refresh_token"]).json()["error"] == "invalid_grant"
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()


def test_grace_covers_only_the_immediately_preceding_token(flow):
    first = flow.connect()
    second = flow.refresh(first.refresh_token).json()
    third = flow.refresh(second["refresh_token"]).json()
    # Two generations back, even within seconds: a replay, so the family dies.
    assert flow.refresh(first.refresh_token).json()["error"] == "invalid_grant"
    assert me(flow, third["access_token"]) == 401


def test_grace_window_is_a_setting(flow, settings):
    settings.OAUTH_REFRESH_GRACE_SECONDS = 5
    first = flow.connect()
    second = flow.refresh(first.refresh_token).json()
    with time_machine.travel(timezone.now() + timedelta(seconds=6)):
        assert flow.refresh(first.refresh_token).json()["error"] == "invalid_grant"
        assert me(flow, second["access_token"]) == 401


def test_revoked_token_is_not_honoured_by_the_grace_window(flow):
    first = flow.connect()
    second = flow.refresh(first.refresh_token).json()
    revoke = flow.api(second["access_token"]).generic("POST", "/api/oauth/zapier/revoke")
    assert revoke.status_code == 200
    # Seconds after a deliberate revocation, neither token may mint anything.
    assert flow.refresh(first.refresh_token).json()["error"] == "invalid_grant"
    assert flow.refresh(second["refresh_token"]).json()["error"] == "invalid_grant"
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()


def test_refresh_token_is_bound_to_its_client(flow):
    tokens = flow.connect()
    other = make_application(name="Other client")
    response = post_form(
        flow.server,
        TOKEN,
        {
            "grant_type": "refresh_token",
            "refresh_token": tokens.refresh_token,
            "client_id": other.client_id,
            "client_secret": CLIENT_SECRET,
        },
    )
    assert response.json()["error"] == "invalid_grant"
    # Another client presenting it changes nothing for the real one.
    assert flow.refresh(tokens.refresh_token).status_code == 200


def test_refresh_with_a_bad_client_secret_is_401_invalid_client(flow):
    tokens = flow.connect()
    response = flow.refresh(tokens.refresh_token, client_secret="wrong")
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"
    assert flow.refresh(tokens.refresh_token).status_code == 200


def test_unknown_refresh_token_is_invalid_grant(flow):
    response = flow.refresh("not-a-refresh-token")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"


def test_scope_can_narrow_on_refresh(flow):
    tokens = flow.connect(scope="read write")
    narrowed = flow.refresh(tokens.refresh_token, scope="read").json()
    assert narrowed["scope"] == "read"
    # ... and cannot widen back afterwards.
    widened = flow.refresh(narrowed["refresh_token"], scope="read write")
    assert widened.status_code == 400
    assert widened.json()["error"] == "invalid_scope"


def test_scope_cannot_widen_on_refresh(flow):
    tokens = flow.connect(scope="read")
    response = flow.refresh(tokens.refresh_token, scope="read write")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_scope"
    assert flow.refresh(tokens.refresh_token).json()["scope"] == "read"


def test_refresh_token_idle_expires_after_the_configured_days(flow, settings):
    assert settings.OAUTH2_PROVIDER["REFRESH_TOKEN_EXPIRE_SECONDS"] == 90 * 86400
    tokens = flow.connect()
    # Idle time is counted from the access token's expiry (one hour after issue).
    with time_machine.travel(timezone.now() + timedelta(days=90, minutes=30)):
        still_alive = flow.refresh(tokens.refresh_token)
        assert still_alive.status_code == 200
        fresh = still_alive.json()["refresh_token"]
    with time_machine.travel(timezone.now() + timedelta(days=90 + 90, hours=2)):
        response = flow.refresh(fresh)
        assert response.status_code == 400
        assert response.json()["error"] == "invalid_grant"


def test_refresh_for_a_disabled_owner_is_invalid_grant(flow, owner):
    tokens = flow.connect()
    owner.is_active = False
    owner.save()
    assert flow.refresh(tokens.refresh_token).json()["error"] == "invalid_grant"


def test_connection_created_at_survives_rotation(flow):
    first = flow.connect()
    created = Connection.objects.get().created_at
    with time_machine.travel(timezone.now() + timedelta(minutes=50)):
        second = flow.refresh(first.refresh_token).json()
        status = flow.api(second["access_token"]).get("/api/zapier/status").json()
    assert status["created_at"] == created.isoformat().replace("+00:00", "Z")


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


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
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


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
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


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
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
