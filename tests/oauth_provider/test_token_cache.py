"""The bearer-token cache: a hit spares the token query; every way a token stops being valid
refuses it from the very next request, including a lookup racing the revocation."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.db import connection as db_connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from oauth2_provider.models import get_access_token_model

from core import versioned_cache
from oauth_provider import services, token_cache
from oauth_provider.models import Connection, token_digest
from tests.oauth_provider.conftest import revoke, rfc7009
from tests.support.cache import DownCache
from tests.support.oauth import issue_tokens

pytestmark = pytest.mark.django_db

AccessToken = get_access_token_model()
ME = "/api/zapier/me"


def token_queries(queries) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if "oauth2_provider_accesstoken" in q["sql"]]


def me(flow, access_token: str):
    return flow.api(access_token).get(ME)


def warm(flow, access_token: str) -> None:
    """Two requests: the first reads the database and caches, the second must hit."""
    assert me(flow, access_token).status_code == 200
    with CaptureQueriesContext(db_connection) as queries:
        assert me(flow, access_token).status_code == 200
    assert token_queries(queries) == [], "the second request should be served from the cache"


def assert_refused(flow, access_token: str) -> None:
    response = me(flow, access_token)
    assert response.status_code == 401, response.content
    assert response.json()["error"] == "unauthorized"


def test_token_cache_hit_needs_no_token_query_and_keeps_the_owner(flow):
    tokens = flow.connect()
    warm(flow, tokens.access_token)
    with CaptureQueriesContext(db_connection) as queries:
        response = me(flow, tokens.access_token)
    assert response.json() == {
        "id": str(flow.owner.pk),
        "email": flow.owner.email,
        "business_name": flow.owner.business_name,
        "role": "owner",
    }
    assert token_queries(queries) == []
    assert not [q for q in queries.captured_queries if "accounts_user" in q["sql"]]


def test_token_cache_never_stores_the_password_hash_or_the_raw_token(flow):
    tokens = flow.connect()
    warm(flow, tokens.access_token)
    entry = versioned_cache.read(f"oauth:token:{token_digest(tokens.access_token)}").value
    assert entry is not None
    assert "password" not in entry["user"]
    assert "token" not in entry["token"]
    assert tokens.access_token not in repr(entry)


def test_token_cache_disconnect_refuses_the_token_on_the_next_request(flow):
    tokens = flow.connect()
    warm(flow, tokens.access_token)
    assert revoke(tokens.access_token).status_code == 200
    assert_refused(flow, tokens.access_token)


def test_token_cache_rfc7009_revocation_refuses_the_token_on_the_next_request(flow):
    tokens = flow.connect()
    warm(flow, tokens.access_token)
    assert rfc7009(flow, tokens.refresh_token).status_code == 200
    assert_refused(flow, tokens.access_token)


def test_token_cache_rotation_refuses_the_old_access_token(flow):
    tokens = flow.connect()
    warm(flow, tokens.access_token)
    refreshed = flow.refresh(tokens.refresh_token)
    assert refreshed.status_code == 200
    assert_refused(flow, tokens.access_token)
    assert me(flow, refreshed.json()["access_token"]).status_code == 200


def test_token_cache_connection_revoke_service_refuses_the_token(flow):
    tokens = flow.connect()
    warm(flow, tokens.access_token)
    services.connection_revoke(connection_id=Connection.objects.get().pk)
    assert_refused(flow, tokens.access_token)


def test_token_cache_deactivating_the_owner_refuses_the_token(flow):
    tokens = flow.connect()
    warm(flow, tokens.access_token)
    flow.owner.is_active = False
    flow.owner.save()
    assert_refused(flow, tokens.access_token)


def test_token_cache_narrowing_the_scope_in_the_admin_applies_at_once(flow):
    tokens = flow.connect()
    warm(flow, tokens.access_token)
    token = AccessToken.objects.get()
    token.scope = "write"
    token.save()
    response = me(flow, tokens.access_token)
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_scope"


def test_token_cache_owner_changes_reach_the_api_at_once(flow):
    tokens = flow.connect()
    warm(flow, tokens.access_token)
    flow.owner.business_name = "Renamed Plumbing"
    flow.owner.save(update_fields=["business_name"])
    assert me(flow, tokens.access_token).json()["business_name"] == "Renamed Plumbing"


def test_token_cache_a_login_does_not_invalidate_the_owners_tokens(flow):
    tokens = flow.connect()
    warm(flow, tokens.access_token)
    flow.owner.last_login = timezone.now()
    flow.owner.save(update_fields=["last_login"])
    with CaptureQueriesContext(db_connection) as queries:
        assert me(flow, tokens.access_token).status_code == 200
    assert token_queries(queries) == []


def test_token_cache_an_expired_token_is_refused_even_when_cached(owner, flow):
    access, _ = issue_tokens(owner, expires_in=3600)
    warm(flow, access)
    with time_machine.travel(timezone.now() + timedelta(hours=1, seconds=1), tick=False):
        assert_refused(flow, access)


def test_token_cache_lookup_racing_a_revocation_is_never_served(owner, flow):
    """A request reads the generation, then the still-valid row, and writes its entry only after
    the revocation committed: the entry carries the old generation and is ignored."""
    access, _ = issue_tokens(owner)
    state, cached = token_cache.lookup(access)
    assert cached is None
    row = AccessToken.objects.select_related("user").get(token_checksum=token_digest(access))
    services.token_revoke(token=access, application=row.application)  # commits, bumps
    token_cache.store(state, row.user, row)  # the racing request writes late
    assert token_cache.lookup(access)[1] is None
    assert_refused(flow, access)


def test_token_cache_revocation_inside_a_transaction_bumps_again_after_commit(
    owner, django_capture_on_commit_callbacks
):
    """The bump after commit closes the window of a lookup that read the generation after the
    first bump but the row before the commit."""
    access, _ = issue_tokens(owner)
    row = AccessToken.objects.get(token_checksum=token_digest(access))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.token_revoke(token=access, application=row.application)
        # Between the first bump and the commit: a lookup sees the new generation and the row.
        state, _ = token_cache.lookup(access)
        token_cache.store(state, row.user, row)
    assert token_cache.lookup(access)[1] is not None  # what the window would serve
    for callback in callbacks:
        callback()
    assert token_cache.lookup(access)[1] is None


def test_token_cache_down_falls_back_to_the_database(flow, monkeypatch):
    tokens = flow.connect()

    monkeypatch.setattr(versioned_cache, "cache", DownCache())
    assert me(flow, tokens.access_token).status_code == 200
    assert revoke(tokens.access_token).status_code == 200
    assert_refused(flow, tokens.access_token)


def test_token_cache_seconds_zero_turns_the_cache_off(flow, settings):
    settings.OAUTH_TOKEN_CACHE_SECONDS = 0
    tokens = flow.connect()
    me(flow, tokens.access_token)
    with CaptureQueriesContext(db_connection) as queries:
        assert me(flow, tokens.access_token).status_code == 200
    assert len(token_queries(queries)) == 1


def test_token_cache_entry_lives_no_longer_than_the_token(owner, monkeypatch):
    access, _ = issue_tokens(owner, expires_in=20)
    timeouts = []
    real_write = versioned_cache.write
    monkeypatch.setattr(
        versioned_cache,
        "write",
        lambda state, value, *, timeout: (
            timeouts.append(timeout) or real_write(state, value, timeout=timeout)
        ),
    )
    state, _ = token_cache.lookup(access)
    row = AccessToken.objects.select_related("user").get(token_checksum=token_digest(access))
    token_cache.store(state, row.user, row)
    assert timeouts and timeouts[0] <= 20


def test_token_cache_header_parsed_otherwise_than_by_dot_caches_nothing(owner, flow):
    access, _ = issue_tokens(owner)
    state, _ = token_cache.lookup(access + " ")  # another digest than the stored token's
    row = AccessToken.objects.select_related("user").get(token_checksum=token_digest(access))
    token_cache.store(state, row.user, row)
    assert token_cache.lookup(access + " ")[1] is None
