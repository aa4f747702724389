"""Refresh: rotation, the parallel-refresh grace window, reuse detection, idle expiry, scope."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone
from oauth2_provider.models import get_refresh_token_model

from oauth_provider.models import Connection
from tests.oauth_provider.conftest import TOKEN, post_form
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
