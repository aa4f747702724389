"""The OAuth endpoints (oauth_provider.views): authorization (login, consent, redirects, and
requests that must never redirect), revocation (the JSON disconnect endpoint and DOT's RFC 7009
endpoint), and the RFC 8414 metadata; with teams, the consent page names the locations an app
will reach and a member approves it for themselves."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client
from oauth2_provider.models import get_access_token_model, get_grant_model, get_refresh_token_model

from accounts.models import Role
from oauth_provider.models import token_digest
from tests.factories import LocationFactory, UserFactory, first_location
from tests.oauth_provider.conftest import (
    AUTHORIZE,
    REVOKE,
    REVOKE_TOKEN,
    OAuthFlow,
    basic_auth,
    pkce_pair,
    post_form,
    query,
    revoke,
    rfc7009,
)
from tests.support.oauth import REDIRECT_URI, issue_tokens, make_application

pytestmark = pytest.mark.django_db


def assert_strict_page_headers(response):
    assert response["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]
    assert response["Referrer-Policy"] == "no-referrer"


def assert_error_page(response, text: str):
    assert response.status_code == 400
    assert not response.has_header("Location")
    assert text in response.content.decode()
    assert_strict_page_headers(response)


def test_anonymous_owner_is_sent_to_login_and_back(flow):
    anonymous = Client()
    params = flow.authorize_params(scope="read")
    response = anonymous.get(AUTHORIZE, params)
    assert response.status_code == 302
    login_url = response["Location"].partition("?")[0]
    assert login_url == "/accounts/login/"
    next_url = query(response["Location"])["next"]
    assert next_url.startswith(AUTHORIZE + "?")
    assert query(next_url) == params

    login_page = anonymous.get(response["Location"])
    assert login_page.status_code == 200
    assert_strict_page_headers(login_page)
    logged_in = anonymous.post(
        "/accounts/login/",
        {
            "username": flow.owner.email,
            "password": "correct horse battery staple",
            "next": next_url,
        },
    )
    assert logged_in.status_code == 302
    assert logged_in["Location"] == next_url
    consent = anonymous.get(next_url)
    assert consent.status_code == 200
    assert b"Approve" in consent.content


def test_anonymous_request_for_an_unknown_client_is_an_error_page_not_a_login(flow):
    response = Client().get(AUTHORIZE, flow.authorize_params(client_id="nope"))
    assert_error_page(response, "invalid_request")


def test_consent_page_names_client_business_and_each_scope_in_plain_words(flow):
    page = flow.consent_page(scope="read write")
    assert page.status_code == 200
    html = page.content.decode()
    assert flow.application.name in html
    assert flow.owner.business_name in html
    assert flow.owner.email in html
    for description in settings.OAUTH2_PROVIDER["SCOPES"].values():
        assert description in html
    assert "zapier.com" in html  # where the owner will be sent back
    assert "Approve" in html and "Deny" in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert_strict_page_headers(page)
    assert page["Cache-Control"] == "no-store"
    assert "default-src 'none'" in page["Content-Security-Policy"]  # no third-party assets


def test_consent_page_loads_nothing_from_other_origins(flow):
    html = flow.consent_page().content.decode()
    assert "http://" not in html and "https://" not in html.replace(REDIRECT_URI, "")


def test_scope_defaults_to_read_write(flow):
    page = flow.consent_page()
    assert page.context["form"].initial["scope"] == "read write"


def test_approve_redirects_with_code_state_and_issuer(flow):
    page = flow.consent_page(scope="read")
    response = flow.decide(page, allow=True)
    assert response.status_code == 302  # never 307 (RFC 9700 §4.12)
    assert response["Location"].startswith(REDIRECT_URI + "?")
    params = query(response["Location"])
    assert set(params) == {"code", "state", "iss"}
    assert params["state"] == "state-123"
    assert params["iss"] == settings.OAUTH2_PROVIDER["OIDC_ISS_ENDPOINT"]
    grant = get_grant_model().objects.get()
    assert grant.scope == "read"
    # Stored as a digest only.
    assert grant.code == token_digest(params["code"]) != params["code"]


def test_deny_redirects_with_access_denied_and_state(flow):
    page = flow.consent_page()
    response = flow.decide(page, allow=False)
    assert response.status_code == 302
    assert response["Location"].startswith(REDIRECT_URI + "?")
    params = query(response["Location"])
    assert params["error"] == "access_denied"
    assert params["state"] == "state-123"
    assert not get_grant_model().objects.exists()


def test_consent_post_without_csrf_token_is_refused(flow):
    page = flow.consent_page()
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(flow.owner)
    form = page.context["form"]
    data = {field.name: field.value() or "" for field in form if field.is_hidden}
    response = browser.post(AUTHORIZE, {**data, "allow": "on"})
    assert response.status_code == 403
    assert not get_grant_model().objects.exists()


def test_tampered_redirect_uri_in_the_consent_form_is_never_redirected_to(flow):
    page = flow.consent_page()
    form = page.context["form"]
    data = {field.name: field.value() or "" for field in form if field.is_hidden}
    for allow in ({"allow": "on"}, {}):
        response = flow.browser.post(
            AUTHORIZE, {**data, **allow, "redirect_uri": "https://evil.example/"}
        )
        assert_error_page(response, "cannot be completed")
    assert not get_grant_model().objects.exists()


def test_incomplete_consent_form_is_an_error_page(flow):
    response = flow.browser.post(
        AUTHORIZE, {"allow": "on", "client_id": flow.application.client_id}
    )
    assert_error_page(response, "incomplete")
    assert not get_grant_model().objects.exists()


def test_unknown_client_is_an_error_page(flow):
    assert_error_page(flow.consent_page(client_id="unknown-client"), "invalid_request")


def test_missing_redirect_uri_is_an_error_page(flow):
    assert_error_page(flow.consent_page(redirect_uri=None), "invalid_request")


@pytest.mark.parametrize(
    "redirect_uri",
    [
        "https://evil.example/dashboard/auth/oauth/return/App123CLIAPI/",
        REDIRECT_URI + "?extra=1",
        REDIRECT_URI + "#",
        REDIRECT_URI + "#fragment",
        REDIRECT_URI.rstrip("/"),
        REDIRECT_URI + "more/",
        REDIRECT_URI.replace("App123CLIAPI", "app123cliapi"),
        REDIRECT_URI.replace("zapier.com", "ZAPIER.com"),
        REDIRECT_URI.replace("https://", "http://"),
        REDIRECT_URI.replace("zapier.com", "zapier.com:443"),
        REDIRECT_URI.replace("https://", "https://user@"),
        REDIRECT_URI.rstrip("/") + ";x=1/",
        REDIRECT_URI.replace("/return/", "/return/../return/"),
    ],
)
def test_unregistered_redirect_uri_is_never_redirected_to(flow, redirect_uri):
    response = flow.consent_page(redirect_uri=redirect_uri)
    assert_error_page(response, "invalid_request")


def test_bad_response_type_redirects_with_error_and_state(flow):
    for response_type in ("token", "code token", "id_token", None):
        response = flow.consent_page(response_type=response_type)
        assert response.status_code == 302, response_type
        params = query(response["Location"])
        assert response["Location"].startswith(REDIRECT_URI + "?")
        expected = "invalid_request" if response_type is None else "unsupported_response_type"
        assert params["error"] == expected, params
        assert params["state"] == "state-123"
        assert params["iss"] == settings.OAUTH2_PROVIDER["OIDC_ISS_ENDPOINT"]


def test_unknown_scope_redirects_with_invalid_scope_and_state(flow):
    for scope in ("read admin", "read,write", "READ"):
        response = flow.consent_page(scope=scope)
        assert response.status_code == 302
        params = query(response["Location"])
        assert params["error"] == "invalid_scope"
        assert params["state"] == "state-123"


def test_consent_is_always_shown_even_when_the_client_asks_to_skip_it(flow, owner):
    flow.connect()  # a live token with the same scopes exists
    flow.application.skip_authorization = True
    flow.application.save()
    page = flow.consent_page(approval_prompt="auto")
    assert page.status_code == 200
    assert b"Approve" in page.content


def test_plain_pkce_is_refused_with_invalid_request(flow):
    verifier, _ = pkce_pair()
    for method in ("plain", None):
        response = flow.consent_page(code_challenge=verifier[:43], code_challenge_method=method)
        assert response.status_code == 302
        params = query(response["Location"])
        assert params["error"] == "invalid_request"
        assert params["state"] == "state-123"


def test_malformed_s256_challenge_is_refused(flow):
    for challenge in ("short", "x" * 44, "+" * 43):
        response = flow.consent_page(code_challenge=challenge, code_challenge_method="S256")
        assert query(response["Location"])["error"] == "invalid_request"


def test_challenge_method_without_challenge_is_refused(flow):
    response = flow.consent_page(code_challenge_method="S256")
    assert query(response["Location"])["error"] == "invalid_request"


def test_pkce_is_optional_unless_the_client_is_listed(flow, owner, settings):
    assert flow.consent_page().status_code == 200
    strict = make_application(client_id="must-use-pkce")
    settings.OAUTH_PKCE_REQUIRED_CLIENTS = ["must-use-pkce"]
    strict_flow = OAuthFlow(owner, strict)
    response = strict_flow.consent_page()
    assert query(response["Location"])["error"] == "invalid_request"
    _, challenge = pkce_pair()
    assert (
        strict_flow.consent_page(code_challenge=challenge, code_challenge_method="S256").status_code
        == 200
    )


def test_disabled_owner_cannot_authorize(flow, owner):
    owner.is_active = False
    owner.save()
    response = flow.consent_page()
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


AccessToken = get_access_token_model()


RefreshToken = get_refresh_token_model()


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


# --- The consent page with teams and locations ------------------------------------------------


@pytest.fixture
def team(owner):
    downtown = first_location(owner, name="Downtown")
    uptown = LocationFactory(account=owner, name="Uptown")
    airport = LocationFactory(account=owner, name="Airport")
    manager = UserFactory(account=owner, role=Role.MANAGER, email="manager@example.com")
    manager.locations.set([uptown])
    return owner, (downtown, uptown, airport), manager


def test_the_owners_consent_page_lists_every_location(team, application):
    owner, locations, _ = team
    html = OAuthFlow(owner, application).consent_page(scope="read write").content.decode()
    assert "At every location of the account" in html
    for location in locations:
        assert f"<li>{location.name}</li>" in html


def test_a_member_approves_for_themselves_and_their_token_reaches_their_locations(
    team, application
):
    owner, (_, uptown, _), manager = team
    flow = OAuthFlow(manager, application)
    page = flow.consent_page(scope="read write")
    assert page.status_code == 200
    html = page.content.decode()
    assert "At your locations only" in html and "<li>Uptown</li>" in html
    assert "<li>Downtown</li>" not in html and "<li>Airport</li>" not in html
    assert owner.business_name in html
    tokens = flow.connect(scope="read write")
    api = flow.api(tokens.access_token)
    me = api.get("/api/zapier/me").json()
    assert (me["id"], me["role"]) == (str(manager.pk), "manager")
    listed = api.get("/api/zapier/locations").json()["results"]
    assert [loc["id"] for loc in listed] == [str(uptown.pk)]


def test_a_viewer_is_told_the_app_will_only_read(team, application):
    owner, (_, uptown, _), _ = team
    viewer = UserFactory(account=owner, role=Role.VIEWER)
    viewer.locations.set([uptown])
    html = OAuthFlow(viewer, application).consent_page(scope="read write").content.decode()
    assert "Your role is viewer" in html
