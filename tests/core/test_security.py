"""Browser-facing pages: framing, referrer and the CSRF check under ``no-referrer``.

Pages that send ``Referrer-Policy: no-referrer`` make browsers post their forms with
``Origin: null`` (Fetch standard); the CSRF middleware must accept that only when the browser
says the request is same-origin, and must still check the token.
"""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.factories import DEFAULT_PASSWORD

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"


def login_attempt(owner, *, secure: bool = False, with_token: bool = True, **headers):
    browser = Client(enforce_csrf_checks=True)
    page = browser.get(LOGIN, secure=secure)
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode())
    assert match is not None, "the login page carries a CSRF token"
    token = match[1]
    data = {"username": owner.email, "password": DEFAULT_PASSWORD}
    if with_token:
        data["csrfmiddlewaretoken"] = token
    return browser.post(LOGIN, data, secure=secure, **headers)


def test_login_page_is_not_frameable_and_sends_no_referrer():
    response = Client().get(LOGIN)
    assert response["X-Frame-Options"] == "DENY"
    assert response["Content-Security-Policy"] == "frame-ancestors 'none'"
    assert response["Referrer-Policy"] == "no-referrer"


def test_every_response_forbids_framing():
    for path in ("/", "/api/zapier/me", "/.well-known/oauth-authorization-server"):
        assert "frame-ancestors 'none'" in Client().get(path)["Content-Security-Policy"]


@pytest.mark.parametrize("secure", [False, True])
def test_form_post_with_null_origin_from_the_same_origin_passes_csrf(owner, secure):
    response = login_attempt(
        owner, secure=secure, HTTP_ORIGIN="null", HTTP_SEC_FETCH_SITE="same-origin"
    )
    assert response.status_code == 302  # logged in


@pytest.mark.parametrize("fetch_site", [None, "cross-site", "same-site", "none"])
def test_null_origin_without_a_same_origin_fetch_is_refused(owner, fetch_site):
    headers = {"HTTP_ORIGIN": "null"}
    if fetch_site:
        headers["HTTP_SEC_FETCH_SITE"] = fetch_site
    assert login_attempt(owner, **headers).status_code == 403


def test_null_origin_still_needs_the_csrf_token(owner):
    response = login_attempt(
        owner, with_token=False, HTTP_ORIGIN="null", HTTP_SEC_FETCH_SITE="same-origin"
    )
    assert response.status_code == 403


def test_foreign_origin_is_refused(owner):
    response = login_attempt(
        owner, HTTP_ORIGIN="https://evil.example", HTTP_SEC_FETCH_SITE="same-origin"
    )
    assert response.status_code == 403
