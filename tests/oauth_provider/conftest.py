"""Helpers for walking the OAuth flow with Django's test client (the live test uses Authlib)."""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.test import Client

from tests.support.oauth import CLIENT_SECRET, REDIRECT_URI

AUTHORIZE = "/api/oauth/zapier/authorize"
TOKEN = "/api/oauth/zapier/token"
REVOKE = "/api/oauth/zapier/revoke"
REVOKE_TOKEN = "/api/oauth/zapier/revoke_token"


def pkce_pair() -> tuple[str, str]:
    """(code_verifier, S256 code_challenge) as RFC 7636 §4.1-4.2 define them."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def post_form(client: Client, path: str, data: dict, **extra):
    """A form-encoded POST, as OAuth clients send (Django's client defaults to multipart)."""
    return client.post(
        path, urlencode(data), content_type="application/x-www-form-urlencoded", **extra
    )


def query(location: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}


def basic_auth(client_id: str, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


@dataclass
class Tokens:
    access_token: str
    refresh_token: str
    body: dict


class OAuthFlow:
    """The owner's browser (consent) and the platform's server side (token endpoint)."""

    def __init__(self, owner, application):
        self.owner = owner
        self.application = application
        self.browser = Client()
        self.browser.force_login(owner)
        self.server = Client()

    def authorize_params(self, **overrides) -> dict:
        params = {
            "client_id": self.application.client_id,
            "redirect_uri": REDIRECT_URI,
            "response_type": "code",
            "state": "state-123",
        }
        params.update(overrides)
        return {key: value for key, value in params.items() if value is not None}

    def consent_page(self, **params):
        return self.browser.get(AUTHORIZE, self.authorize_params(**params))

    def decide(self, page, *, allow: bool):
        form = page.context["form"]
        data = {field.name: field.value() or "" for field in form if field.is_hidden}
        if allow:
            data["allow"] = "on"
        return self.browser.post(
            page.request["PATH_INFO"] + "?" + page.request["QUERY_STRING"], data
        )

    def code(self, **params) -> str:
        page = self.consent_page(**params)
        assert page.status_code == 200, page.content
        response = self.decide(page, allow=True)
        assert response.status_code == 302, response.content
        location = query(response["Location"])
        assert "code" in location, response["Location"]
        return location["code"]

    def token_request(self, **data):
        body = {"client_id": self.application.client_id, "client_secret": CLIENT_SECRET, **data}
        return post_form(self.server, TOKEN, {k: v for k, v in body.items() if v is not None})

    def exchange(self, code: str, **data):
        data = {"redirect_uri": REDIRECT_URI, **data}
        return self.token_request(grant_type="authorization_code", code=code, **data)

    def refresh(self, refresh_token: str, **data):
        return self.token_request(grant_type="refresh_token", refresh_token=refresh_token, **data)

    def connect(self, *, scope: str | None = None) -> Tokens:
        """Consent and exchange with PKCE S256, as Zapier does; returns the issued tokens."""
        verifier, challenge = pkce_pair()
        code = self.code(scope=scope, code_challenge=challenge, code_challenge_method="S256")
        response = self.exchange(code, code_verifier=verifier)
        assert response.status_code == 200, response.content
        body = response.json()
        return Tokens(body["access_token"], body["refresh_token"], body)

    def api(self, access_token: str) -> Client:
        return Client(HTTP_AUTHORIZATION=f"Bearer {access_token}")


@pytest.fixture
def flow(owner, application):
    return OAuthFlow(owner, application)


def revoke(access_token: str, body: dict | None = None):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {access_token}")
    if body is None:
        return client.generic("POST", REVOKE)
    return client.post(REVOKE, body, content_type="application/json")


def rfc7009(flow, token: str, **extra):
    return post_form(
        flow.server,
        REVOKE_TOKEN,
        {"token": token, "client_id": flow.application.client_id, "client_secret": CLIENT_SECRET},
        **extra,
    )
