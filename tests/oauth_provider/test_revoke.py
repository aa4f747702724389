"""Revocation: the JSON disconnect endpoint, DOT's RFC 7009 endpoint, and RFC 8414 metadata."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client
from oauth2_provider.models import get_access_token_model, get_refresh_token_model

from tests.oauth_provider.conftest import REVOKE, REVOKE_TOKEN, OAuthFlow, basic_auth, post_form
from tests.support.oauth import CLIENT_SECRET, issue_tokens, make_application

pytestmark = pytest.mark.django_db

AccessToken = get_access_token_model()
RefreshToken = get_refresh_token_model()


def revoke(access_token: str, body: dict | None = None):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {access_token}")
    if body is None:
        return client.generic("POST", REVOKE)
    return client.post(REVOKE, body, content_type="application/json")


def works(flow, access_token: str) -> bool:
    return flow.api(access_token).get("/api/zapier/me").status_code == 200


def test_revoke_without_body_revokes_all_of_the_callers_tokens(flow):
    first, second = flow.connect(), flow.connect()
    response = revoke(first.access_token)
    assert response.status_code == 200
    assert response.json() == {
        "success": True,
        "message": "Revoked 4 token(s): Zapier is disconnected.",
        "revoked_count": 4,
    }
    for tokens in (first, second):
        assert not works(flow, tokens.access_token)
        assert flow.refresh(tokens.refresh_token).json()["error"] == "invalid_grant"
    assert revoke(first.access_token).status_code == 401


def test_revoke_without_body_leaves_other_owners_and_other_clients_alone(flow, other_owner):
    mine = flow.connect()
    theirs = OAuthFlow(other_owner, flow.application).connect()
    other_client = OAuthFlow(flow.owner, make_application(name="Make")).connect()
    assert revoke(mine.access_token, {}).json()["revoked_count"] == 2
    assert works(flow, theirs.access_token)
    assert works(flow, other_client.access_token)


def test_revoking_an_access_token_revokes_its_refresh_token(flow):
    caller, target = flow.connect(), flow.connect()
    response = revoke(caller.access_token, {"token": target.access_token})
    assert response.json()["revoked_count"] == 2
    assert response.json()["success"] is True
    assert not works(flow, target.access_token)
    assert flow.refresh(target.refresh_token).json()["error"] == "invalid_grant"
    assert works(flow, caller.access_token)


def test_revoking_a_refresh_token_revokes_its_access_token(flow):
    caller, target = flow.connect(), flow.connect()
    assert revoke(caller.access_token, {"token": target.refresh_token}).json()["revoked_count"] == 2
    assert not works(flow, target.access_token)
    assert flow.refresh(target.refresh_token).json()["error"] == "invalid_grant"


def test_revoking_the_callers_own_token_disconnects_it(flow):
    tokens = flow.connect()
    assert revoke(tokens.access_token, {"token": tokens.access_token}).json()["revoked_count"] == 2
    assert not works(flow, tokens.access_token)


def test_another_users_token_is_not_touched(flow, other_owner):
    mine = flow.connect()
    theirs = OAuthFlow(other_owner, flow.application).connect()
    for token in (theirs.access_token, theirs.refresh_token):
        response = revoke(mine.access_token, {"token": token})
        assert response.status_code == 200
        assert response.json()["revoked_count"] == 0
        assert response.json()["success"] is True
    assert works(flow, theirs.access_token)
    assert flow.refresh(theirs.refresh_token).status_code == 200


def test_unknown_token_revokes_nothing(flow):
    tokens = flow.connect()
    response = revoke(tokens.access_token, {"token": "no-such-token"})
    assert response.json() == {
        "success": True,
        "message": "No active token of yours matched.",
        "revoked_count": 0,
    }
    assert works(flow, tokens.access_token)


def test_revoke_needs_a_valid_bearer_token(flow):
    response = Client().post(REVOKE, {}, content_type="application/json")
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"


def test_revoke_rejects_a_malformed_body(flow):
    tokens = flow.connect()
    response = revoke(tokens.access_token, {"token": ["a", "list"]})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    assert works(flow, tokens.access_token)


def test_revoke_ends_a_parallel_refresh_sibling_too(flow):
    first = flow.connect()
    a = flow.refresh(first.refresh_token).json()
    b = flow.refresh(first.refresh_token).json()  # grace: a second pair in the same family
    assert revoke(a["access_token"], {"token": a["access_token"]}).json()["revoked_count"] == 4
    assert not works(flow, b["access_token"])


def test_tokens_without_a_connection_are_revoked_as_a_pair(owner):
    _, refresh = issue_tokens(owner)
    RefreshToken.objects.update(token_family=None)
    caller, _ = issue_tokens(owner, application=AccessToken.objects.get().application)
    assert revoke(caller, {"token": refresh}).json()["revoked_count"] == 2
    target = RefreshToken.objects.get(token_family=None)
    assert target.revoked is not None
    assert target.access_token is None
    assert AccessToken.objects.count() == 1  # the caller's


# --- RFC 7009 ------------------------------------------------------------------------------------


def rfc7009(flow, token: str, **extra):
    return post_form(
        flow.server,
        REVOKE_TOKEN,
        {"token": token, "client_id": flow.application.client_id, "client_secret": CLIENT_SECRET},
        **extra,
    )


def test_rfc7009_revocation_revokes_the_clients_token_and_its_pair(flow):
    tokens = flow.connect()
    response = rfc7009(flow, tokens.access_token)
    assert response.status_code == 200
    assert not works(flow, tokens.access_token)
    assert flow.refresh(tokens.refresh_token).json()["error"] == "invalid_grant"


def test_rfc7009_revocation_answers_200_for_unknown_tokens(flow):
    assert rfc7009(flow, "unknown").status_code == 200


def test_rfc7009_revocation_cannot_touch_another_clients_tokens(flow, owner):
    victim = OAuthFlow(owner, make_application(name="Victim")).connect()
    response = rfc7009(flow, victim.refresh_token)
    assert response.status_code == 200
    assert works(flow, victim.access_token)


def test_rfc7009_revocation_needs_client_authentication(flow):
    tokens = flow.connect()
    response = post_form(
        flow.server,
        REVOKE_TOKEN,
        {"token": tokens.access_token},
        HTTP_AUTHORIZATION=basic_auth(flow.application.client_id, "wrong"),
    )
    assert response.status_code == 401
    assert works(flow, tokens.access_token)


# --- RFC 8414 metadata ---------------------------------------------------------------------------


def test_metadata_advertises_exactly_our_endpoints_and_capabilities():
    response = Client().get("/.well-known/oauth-authorization-server")
    assert response.status_code == 200
    issuer = settings.OAUTH2_PROVIDER["OIDC_ISS_ENDPOINT"]
    auth_methods = ["client_secret_post", "client_secret_basic"]
    assert response.json() == {
        "issuer": issuer,
        "authorization_endpoint": f"{issuer}/api/oauth/zapier/authorize",
        "token_endpoint": f"{issuer}/api/oauth/zapier/token",
        "revocation_endpoint": f"{issuer}/api/oauth/zapier/revoke_token",
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "scopes_supported": ["read", "write"],
        "token_endpoint_auth_methods_supported": auth_methods,
        "revocation_endpoint_auth_methods_supported": auth_methods,
        "authorization_response_iss_parameter_supported": True,
        "client_id_metadata_document_supported": False,
    }
