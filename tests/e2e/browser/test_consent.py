"""The OAuth consent page in a real browser: log in, approve, land on the client's redirect."""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests

from tests.factories import DEFAULT_PASSWORD, UserFactory
from tests.support.browser import horizontal_overflow, screenshot, unlabelled_controls
from tests.support.oauth import CLIENT_SECRET, REDIRECT_URI, make_application

pytestmark = pytest.mark.browser

STATE = "zap-state-4f1c9a"


@pytest.fixture
def zapier_redirect(page):
    """Answer the browser's trip back to Zapier on loopback: nothing leaves the machine. Returns
    the URLs the browser asked for."""
    visited = []

    def fulfil(route):
        visited.append(route.request.url)
        route.fulfill(status=200, content_type="text/html", body="<h1>Back at Zapier</h1>")

    page.route("https://zapier.com/**", fulfil)
    return visited


def authorize_url(application) -> str:
    query = urlencode(
        {
            "client_id": application.client_id,
            "redirect_uri": REDIRECT_URI,
            "response_type": "code",
            "scope": "read write",
            "state": STATE,
        }
    )
    return f"/api/oauth/zapier/authorize?{query}"


def consent_page(page, owner, application) -> None:
    """Open the authorization URL anonymously and log in on the page it sends us to."""
    page.goto(authorize_url(application))
    assert urlsplit(page.url).path == "/accounts/login/"
    page.get_by_label("E-mail").fill(owner.email)
    page.get_by_label("Password").fill(DEFAULT_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("heading", name=f"Connect {application.name} to your account?").wait_for()


def test_an_owner_logs_in_approves_and_lands_on_the_client_redirect_with_a_code(
    page, live_server, zapier_redirect
):

    owner = UserFactory(email="owner@acme-plumbing.example", business_name="Acme Plumbing")
    application = make_application(name="Zapier")
    # Not logged in: the login page first, then straight back to the consent page.
    consent_page(page, owner, application)
    assert page.get_by_text("Add contacts and send them review requests").is_visible()
    assert page.get_by_text("zapier.com").first.is_visible()
    assert unlabelled_controls(page) == []
    screenshot(page, "consent")

    page.get_by_role("button", name="Approve").click()
    page.wait_for_url(f"{REDIRECT_URI}**")
    params = {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}
    assert params["state"] == STATE
    assert params["code"]
    assert zapier_redirect == [page.url]
    # The code is real: the platform exchanges it for tokens that work.
    token = requests.post(
        f"{live_server.url}/api/oauth/zapier/token",
        data={
            "grant_type": "authorization_code",
            "code": params["code"],
            "redirect_uri": REDIRECT_URI,
            "client_id": application.client_id,
            "client_secret": CLIENT_SECRET,
        },
        timeout=10,
    )
    assert token.status_code == 200, token.text
    me = requests.get(
        f"{live_server.url}/api/zapier/me",
        headers={"Authorization": f"Bearer {token.json()['access_token']}"},
        timeout=10,
    )
    assert me.json()["business_name"] == "Acme Plumbing"


def test_deny_sends_the_owner_back_with_an_error_and_no_code(page, zapier_redirect):
    owner = UserFactory()
    application = make_application()
    consent_page(page, owner, application)
    page.get_by_role("button", name="Deny").click()
    page.wait_for_url(f"{REDIRECT_URI}**")
    params = parse_qs(urlsplit(page.url).query)
    assert params["error"] == ["access_denied"]
    assert "code" not in params


def test_the_consent_page_fits_a_phone_screen(phone_page):
    owner = UserFactory(email="owner@acme-plumbing.example", business_name="Acme Plumbing")
    application = make_application(name="Zapier")
    consent_page(phone_page, owner, application)
    assert phone_page.get_by_role("button", name="Approve").is_visible()
    assert phone_page.get_by_role("button", name="Deny").is_visible()
    assert horizontal_overflow(phone_page) <= 0
    screenshot(phone_page, "consent-phone", full_page=False)
