"""The resource side (oauth_provider.authentication): bearer tokens on /api/<platform>/..., /me and
/status."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.core.cache import cache
from django.db import connection as db_connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from oauth2_provider.models import get_access_token_model

from oauth_provider import services
from oauth_provider.models import Connection
from tests.support.oauth import issue_tokens

pytestmark = pytest.mark.django_db


def open_touch_gates():
    """Forget the per-second gates of every token (time travel does not age cache entries, nor
    the process-local gate's monotonic clock)."""
    services._touched.clear()
    cache.delete_many([services.touch_gate_key(t) for t in get_access_token_model().objects.all()])


def bearer(token: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


def assert_unauthorized(response):
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"
    assert response.json()["error_description"]
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_me_returns_the_tokens_owner(flow, other_owner):
    tokens = flow.connect()
    response = bearer(tokens.access_token).get("/api/zapier/me")
    assert response.status_code == 200
    assert response.json() == {
        "id": str(flow.owner.pk),
        "email": flow.owner.email,
        "business_name": flow.owner.business_name,
        "role": "owner",
    }
    other_access, _ = issue_tokens(other_owner)
    assert bearer(other_access).get("/api/zapier/me").json()["id"] == str(other_owner.pk)


def test_me_needs_the_read_scope(owner):
    access, _ = issue_tokens(owner, scope="write")
    response = bearer(access).get("/api/zapier/me")
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_scope"


def test_missing_invalid_and_expired_tokens_are_401_with_a_bearer_challenge(owner):
    expired, _ = issue_tokens(owner, expires_in=-1)
    for client in (Client(), bearer("not-a-token"), bearer(expired)):
        assert_unauthorized(client.get("/api/zapier/me"))
    challenge = bearer(expired).get("/api/zapier/me")["WWW-Authenticate"]
    assert 'error="invalid_token"' in challenge
    assert "expired" in bearer(expired).get("/api/zapier/me").json()["error_description"]


def test_revoked_token_is_401(flow):
    tokens = flow.connect()
    flow.api(tokens.access_token).generic("POST", "/api/oauth/zapier/revoke")
    assert_unauthorized(bearer(tokens.access_token).get("/api/zapier/me"))


def test_token_in_the_query_string_is_refused(owner):
    access, _ = issue_tokens(owner)
    response = Client().get("/api/zapier/me", {"access_token": access})
    assert_unauthorized(response)
    assert "URL" in response.json()["error_description"]
    # Even alongside a valid header.
    assert_unauthorized(bearer(access).get("/api/zapier/me", {"access_token": access}))


def test_token_in_a_form_body_is_not_accepted(owner):
    access, _ = issue_tokens(owner)
    response = Client().post(
        "/api/oauth/zapier/revoke",
        f"access_token={access}",
        content_type="application/x-www-form-urlencoded",
    )
    assert_unauthorized(response)


def test_token_of_a_disabled_owner_is_401(owner):
    access, _ = issue_tokens(owner)
    owner.is_active = False
    owner.save()
    assert_unauthorized(bearer(access).get("/api/zapier/me"))


def test_unknown_platform_is_404(owner):
    access, _ = issue_tokens(owner)
    assert bearer(access).get("/api/make/me").status_code == 404


@pytest.mark.urls("tests.oauth_provider.urls")
def test_read_only_token_gets_403_on_a_write_endpoint(flow):
    tokens = flow.connect(scope="read")
    api = bearer(tokens.access_token)
    response = api.post("/api/test/write")
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_scope"
    assert api.get("/api/zapier/me").status_code == 200
    write_tokens = flow.connect(scope="read write")
    assert bearer(write_tokens.access_token).post("/api/test/write").status_code == 200


# --- /status -------------------------------------------------------------------------------------


def test_status_describes_the_connection(flow):
    with time_machine.travel(timezone.now(), tick=False) as clock:
        tokens = flow.connect(scope="read")
        connected_at = timezone.now()
        clock.shift(timedelta(minutes=10))
        response = bearer(tokens.access_token).get("/api/zapier/status")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {
        "active",
        "auth_type",
        "user_id",
        "scopes",
        "expires_at",
        "created_at",
        "last_used_at",
    }
    assert body["active"] is True
    assert body["auth_type"] == "oauth"
    assert body["user_id"] == str(flow.owner.pk)
    assert body["scopes"] == ["read"]
    assert body["expires_at"] == (connected_at + timedelta(hours=1)).isoformat().replace(
        "+00:00", "Z"
    )
    assert body["created_at"] == connected_at.isoformat().replace("+00:00", "Z")
    assert body["last_used_at"] == (connected_at + timedelta(minutes=10)).isoformat().replace(
        "+00:00", "Z"
    )


def test_status_needs_no_particular_scope(owner):
    access, _ = issue_tokens(owner, scope="write")
    assert bearer(access).get("/api/zapier/status").status_code == 200


def test_status_with_an_invalid_token_is_401_inactive(owner):
    expired, _ = issue_tokens(owner, expires_in=-1)
    for client in (Client(), bearer("nope"), bearer(expired)):
        response = client.get("/api/zapier/status")
        assert_unauthorized(response)
        assert response.json()["active"] is False
        assert set(response.json()) == {"active", "error", "error_description"}


def test_last_used_at_moves_on_every_authenticated_request(flow):
    tokens = flow.connect()
    api = bearer(tokens.access_token)
    with time_machine.travel(timezone.now(), tick=False) as clock:
        for _ in range(3):
            clock.shift(timedelta(seconds=5))
            open_touch_gates()
            api.get("/api/zapier/me")
            assert Connection.objects.get().last_used_at == timezone.now()


def test_recording_use_writes_at_most_once_per_token_per_second(owner):
    access, _ = issue_tokens(owner)
    api = bearer(access)
    api.get("/api/zapier/me")
    with CaptureQueriesContext(db_connection) as queries:
        api.get("/api/zapier/me")
    assert not [q for q in queries.captured_queries if q["sql"].startswith("UPDATE")]


def test_recording_use_is_one_update_statement(owner):
    access, _ = issue_tokens(owner)
    with CaptureQueriesContext(db_connection) as queries:
        bearer(access).get("/api/zapier/me")
    updates = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("UPDATE")]
    assert len(updates) == 1
    assert "oauth_provider_connection" in updates[0]
    assert Connection.objects.get().last_used_at is not None


def test_recording_use_fails_open_when_the_cache_is_down(owner, monkeypatch):
    access, _ = issue_tokens(owner)

    class DownCache:
        def add(self, *args, **kwargs):
            raise ConnectionError("cache unreachable")

    monkeypatch.setattr(services, "cache", DownCache())
    response = bearer(access).get("/api/zapier/me")
    assert response.status_code == 200
    assert Connection.objects.get().last_used_at is not None
