"""The whole connection flow over real HTTP, driven by a real OAuth client library (Authlib).

A requests session plays the owner's browser (login, consent); Authlib plays the platform
(PKCE S256, code exchange, bearer calls, refresh). Nothing is faked: the live server runs the
real URLconf, middleware (CSRF included) and database.
"""

from __future__ import annotations

from urllib.parse import urljoin

import pytest
import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session

from tests.factories import DEFAULT_PASSWORD
from tests.support.consent import approve, log_in
from tests.support.oauth import CLIENT_SECRET, REDIRECT_URI

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def browser():
    # Closed afterwards: a kept-alive connection keeps a server thread and its database session.
    with requests.Session() as session:
        yield session


def test_owner_connects_a_platform_end_to_end(live_server, owner, application, browser, request):
    base = live_server.url
    authorize_url = f"{base}/api/oauth/zapier/authorize"
    token_url = f"{base}/api/oauth/zapier/token"

    platform = OAuth2Session(
        client_id=application.client_id,
        client_secret=CLIENT_SECRET,
        scope="read write",
        redirect_uri=REDIRECT_URI,
        code_challenge_method="S256",
        token_endpoint_auth_method="client_secret_post",
    )
    request.addfinalizer(platform.close)
    code_verifier = generate_token(64)
    url, state = platform.create_authorization_url(authorize_url, code_verifier=code_verifier)

    # The owner's browser: sent to log in, then back to the consent page.
    login_page = browser.get(url, timeout=30)
    assert login_page.url.startswith(f"{base}/accounts/login/?next=")
    assert login_page.headers["X-Frame-Options"] == "DENY"
    consent = log_in(browser, login_page, email=owner.email, password=DEFAULT_PASSWORD)
    assert consent.status_code == 200
    assert consent.url.startswith(authorize_url)
    assert application.name in consent.text and owner.business_name in consent.text
    assert consent.headers["Referrer-Policy"] == "no-referrer"

    approved = approve(browser, consent)
    assert approved.status_code == 302
    callback = approved.headers["Location"]
    assert callback.startswith(REDIRECT_URI)

    # The platform: code + verifier for tokens, then the API.
    token = platform.fetch_token(
        token_url, authorization_response=callback, state=state, code_verifier=code_verifier
    )
    assert token["token_type"] == "Bearer"
    assert token["expires_in"] == 3600
    assert token["scope"] == "read write"

    me = platform.get(f"{base}/api/zapier/me", timeout=30)
    assert me.status_code == 200
    assert me.json() == {
        "id": str(owner.pk),
        "email": owner.email,
        "business_name": owner.business_name,
        "role": "owner",
    }

    old_refresh = token["refresh_token"]
    refreshed = platform.refresh_token(token_url)
    assert refreshed["refresh_token"] != old_refresh
    assert platform.get(f"{base}/api/zapier/status", timeout=30).json()["active"] is True

    revoked = platform.post(urljoin(base, "/api/oauth/zapier/revoke"), json={}, timeout=30)
    assert revoked.status_code == 200
    assert revoked.json()["revoked_count"] == 2

    after = platform.get(f"{base}/api/zapier/me", timeout=30)
    assert after.status_code == 401
    assert after.headers["WWW-Authenticate"].startswith("Bearer")
    assert after.json()["error"] == "unauthorized"
