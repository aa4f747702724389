"""The token endpoint (oauth_provider.server's grants): authorization code exchange, client
authentication, PKCE, faults."""

from __future__ import annotations

import logging

import pytest
import time_machine
from django.db import OperationalError
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_refresh_token_model

from oauth_provider.models import Connection, RedeemedCode, token_digest
from oauth_provider.validators import Grant
from tests.oauth_provider.conftest import REVOKE_TOKEN, TOKEN, basic_auth, pkce_pair, post_form
from tests.support.oauth import CLIENT_SECRET, REDIRECT_URI, make_application

pytestmark = pytest.mark.django_db

AccessToken = get_access_token_model()
RefreshToken = get_refresh_token_model()


def assert_oauth_error(response, status: int, error: str):
    assert response.status_code == status, response.content
    body = response.json()
    assert body["error"] == error
    assert isinstance(body.get("error_description", ""), str)
    return body


def test_code_exchange_answers_exactly_the_spec_fields_and_no_store(flow):
    verifier, challenge = pkce_pair()
    code = flow.code(code_challenge=challenge, code_challenge_method="S256", scope="read write")
    response = flow.exchange(code, code_verifier=verifier)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"access_token", "token_type", "expires_in", "refresh_token", "scope"}
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 3600
    assert body["scope"] == "read write"
    assert response["Cache-Control"] == "no-store"
    assert response["Pragma"] == "no-cache"
    assert response["Content-Type"] == "application/json"


def test_tokens_are_stored_only_as_digests(flow):
    tokens = flow.connect()
    access = AccessToken.objects.get()
    refresh = RefreshToken.objects.get()
    assert access.token == refresh.token == ""
    assert access.token_checksum == token_digest(tokens.access_token)
    assert refresh.token_checksum == token_digest(tokens.refresh_token)


def test_code_exchange_creates_one_connection_for_the_owner(flow):
    flow.connect()
    connection = Connection.objects.get()
    assert (connection.user, connection.application) == (flow.owner, flow.application)
    assert RefreshToken.objects.get().token_family == connection.pk


def test_pkce_is_optional(flow):
    response = flow.exchange(flow.code())
    assert response.status_code == 200


def test_http_basic_client_authentication_is_accepted(flow):
    code = flow.code()
    response = post_form(
        flow.server,
        TOKEN,
        {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI},
        HTTP_AUTHORIZATION=basic_auth(flow.application.client_id, CLIENT_SECRET),
    )
    assert response.status_code == 200, response.content


@pytest.mark.parametrize(
    "credentials",
    [
        {"client_secret": "wrong"},
        {"client_secret": None},
        {"client_id": "unknown-client"},
    ],
)
def test_bad_client_credentials_are_401_invalid_client(flow, credentials):
    code = flow.code()
    response = flow.exchange(code, **credentials)
    assert_oauth_error(response, 401, "invalid_client")
    # The code was not spent: the real client can still redeem it.
    assert flow.exchange(code).status_code == 200


def test_wrong_basic_credentials_are_401_invalid_client(flow):
    response = post_form(
        flow.server,
        TOKEN,
        {"grant_type": "authorization_code", "code": flow.code(), "redirect_uri": REDIRECT_URI},
        HTTP_AUTHORIZATION=basic_auth(flow.application.client_id, "wrong"),
    )
    assert_oauth_error(response, 401, "invalid_client")


@pytest.mark.parametrize(
    "grant_type",
    [
        "password",
        "client_credentials",
        "implicit",
        "openid",
        "urn:ietf:params:oauth:grant-type:device_code",
        "urn:ietf:params:oauth:grant-type:jwt-bearer",
    ],
)
def test_other_grant_types_are_unsupported_grant_type(flow, grant_type):
    response = flow.token_request(
        grant_type=grant_type, username=flow.owner.email, password="x", device_code="x"
    )
    assert_oauth_error(response, 400, "unsupported_grant_type")


def test_missing_grant_type_is_invalid_request(flow):
    assert_oauth_error(flow.token_request(code=flow.code()), 400, "invalid_request")


def test_json_body_is_415_unsupported_media_type(flow):
    response = flow.server.post(
        TOKEN,
        {
            "grant_type": "authorization_code",
            "code": flow.code(),
            "redirect_uri": REDIRECT_URI,
            "client_id": flow.application.client_id,
            "client_secret": CLIENT_SECRET,
        },
        content_type="application/json",
    )
    assert_oauth_error(response, 415, "unsupported_media_type")
    assert not AccessToken.objects.exists()


def test_credentials_in_the_url_are_refused(flow):
    response = flow.server.post(
        f"{TOKEN}?client_secret={CLIENT_SECRET}",
        "grant_type=authorization_code",
        content_type="application/x-www-form-urlencoded",
    )
    assert_oauth_error(response, 400, "invalid_request")


def test_unknown_code_is_invalid_grant(flow):
    assert_oauth_error(flow.exchange("not-a-code"), 400, "invalid_grant")


def test_expired_code_is_invalid_grant(flow):
    code = flow.code()
    with time_machine.travel(timezone.now() + timezone.timedelta(seconds=61), tick=False):
        assert_oauth_error(flow.exchange(code), 400, "invalid_grant")


def test_code_is_bound_to_its_client(flow, owner):
    code = flow.code()
    other = make_application(name="Other")
    response = post_form(
        flow.server,
        TOKEN,
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT_URI,
            "client_id": other.client_id,
            "client_secret": CLIENT_SECRET,
        },
    )
    assert_oauth_error(response, 400, "invalid_grant")
    assert flow.exchange(code).status_code == 200


def test_wrong_redirect_uri_is_invalid_grant(flow):
    code = flow.code()
    response = flow.exchange(code, redirect_uri=REDIRECT_URI + "x")
    assert_oauth_error(response, 400, "invalid_grant")


def test_missing_redirect_uri_is_invalid_request(flow):
    response = flow.exchange(flow.code(), redirect_uri=None)
    assert_oauth_error(response, 400, "invalid_request")


def test_used_code_is_invalid_grant_and_revokes_the_tokens_it_issued(flow):
    code = flow.code()
    first = flow.exchange(code).json()
    api = flow.api(first["access_token"])
    assert api.get("/api/zapier/me").status_code == 200

    replay = flow.exchange(code)

    assert_oauth_error(replay, 400, "invalid_grant")
    assert api.get("/api/zapier/me").status_code == 401
    assert_oauth_error(flow.refresh(first["refresh_token"]), 400, "invalid_grant")
    assert not AccessToken.objects.exists()
    assert RefreshToken.objects.get().revoked is not None


def test_code_replay_leaves_other_connections_alone(flow):
    other_tokens = flow.connect()
    code = flow.code()
    flow.exchange(code)
    flow.exchange(code)
    assert flow.api(other_tokens.access_token).get("/api/zapier/me").status_code == 200


def test_redeemed_code_is_recorded_by_digest(flow):
    code = flow.code()
    flow.exchange(code)
    record = RedeemedCode.objects.get()
    assert record.code_digest == token_digest(code)
    assert record.connection == Connection.objects.get()


# --- PKCE ----------------------------------------------------------------------------------------


def test_pkce_s256_with_the_right_verifier_succeeds(flow):
    verifier, challenge = pkce_pair()
    code = flow.code(code_challenge=challenge, code_challenge_method="S256")
    assert flow.exchange(code, code_verifier=verifier).status_code == 200


def test_missing_verifier_for_a_code_with_a_challenge_is_invalid_grant(flow):
    _, challenge = pkce_pair()
    code = flow.code(code_challenge=challenge, code_challenge_method="S256")
    assert_oauth_error(flow.exchange(code), 400, "invalid_grant")


def test_wrong_verifier_is_invalid_grant(flow):
    _, challenge = pkce_pair()
    other_verifier, _ = pkce_pair()
    code = flow.code(code_challenge=challenge, code_challenge_method="S256")
    assert_oauth_error(flow.exchange(code, code_verifier=other_verifier), 400, "invalid_grant")
    # A failed verification does not spend the code for nobody: the grant is still single-use.
    assert Grant.objects.filter(code=token_digest(code)).exists()


def test_malformed_verifier_is_refused_even_when_it_matches(flow):
    import base64
    import hashlib

    weak = "short-verifier"  # fewer than 43 characters: guessable from the challenge
    challenge = base64.urlsafe_b64encode(hashlib.sha256(weak.encode()).digest()).rstrip(b"=")
    code = flow.code(code_challenge=challenge.decode(), code_challenge_method="S256")
    body = assert_oauth_error(flow.exchange(code, code_verifier=weak), 400, "invalid_grant")
    assert "43 to 128" in body["error_description"]


def test_verifier_for_a_code_issued_without_challenge_is_refused_as_a_downgrade(flow):
    verifier, _ = pkce_pair()
    code = flow.code()  # no code_challenge
    body = assert_oauth_error(flow.exchange(code, code_verifier=verifier), 400, "invalid_grant")
    assert "without a PKCE challenge" in body["error_description"]


# --- Transient faults ----------------------------------------------------------------------------


def test_database_fault_during_code_exchange_is_503_temporarily_unavailable(flow, monkeypatch):
    code = flow.code()

    def unavailable(*args, **kwargs):
        raise OperationalError("canceling statement due to lock timeout")

    monkeypatch.setattr("oauth_provider.validators.OAuth2Validator.validate_code", unavailable)
    response = flow.exchange(code)
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.json()["error"] == "temporarily_unavailable"
    assert response.json()["error_description"]
    monkeypatch.undo()
    assert flow.exchange(code).status_code == 200  # nothing was spent


def test_database_fault_during_refresh_is_503_never_4xx(flow, monkeypatch):
    tokens = flow.connect()

    def unavailable(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr("oauth_provider.validators.RefreshToken.objects.filter", unavailable)
    response = flow.refresh(tokens.refresh_token)
    assert response.status_code == 503
    assert response.json()["error"] == "temporarily_unavailable"
    monkeypatch.undo()
    assert flow.refresh(tokens.refresh_token).status_code == 200


def test_no_credential_reaches_the_logs_even_at_debug_level(flow, caplog):
    caplog.set_level(logging.DEBUG)
    verifier, challenge = pkce_pair()
    code = flow.code(code_challenge=challenge, code_challenge_method="S256")
    tokens = flow.exchange(code, code_verifier=verifier).json()
    flow.exchange(code, code_verifier=verifier)  # replay: logged as a warning
    flow.refresh(tokens["refresh_token"], client_secret="wrong")
    flow.refresh(tokens["refresh_token"])
    flow.api(tokens["access_token"]).get("/api/zapier/me")
    assert caplog.records  # something was logged
    logged = caplog.text + " ".join(str(r.__dict__) for r in caplog.records)
    for secret in (code, verifier, CLIENT_SECRET, tokens["access_token"], tokens["refresh_token"]):
        assert secret not in logged


@pytest.mark.parametrize("path", [TOKEN, REVOKE_TOKEN])
@pytest.mark.parametrize("where", ["client_id", "token", "basic"])
def test_a_nul_character_is_invalid_request_not_a_server_error(flow, path, where):
    # Found by the schemathesis fuzzer: PostgreSQL refuses to compare strings holding NUL, so
    # the client lookup answered 500.
    data = {
        "grant_type": "authorization_code",
        "code": flow.code(),
        "redirect_uri": REDIRECT_URI,
        "client_id": flow.application.client_id,
        "client_secret": CLIENT_SECRET,
        "token": "abc",
    }
    extra = {}
    if where == "basic":
        extra["HTTP_AUTHORIZATION"] = basic_auth("lc\x00k", CLIENT_SECRET)
        del data["client_id"], data["client_secret"]
    else:
        data[where] = data[where] + "\x00"
    response = post_form(flow.server, path, data, **extra)
    body = assert_oauth_error(response, 400, "invalid_request")
    assert "NUL" in body["error_description"]
    assert response["Cache-Control"] == "no-store"
    assert not AccessToken.objects.exists()
