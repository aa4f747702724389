"""Every /api/ error is ``{error, error_description}`` JSON with the right status, whatever
raised it and whatever DEBUG says; pages for people keep HTML error pages."""

from __future__ import annotations

import logging

import pytest
from django.test import Client

from tests.oauth_provider.conftest import post_form
from tests.support.oauth import CLIENT_SECRET, issue_tokens, make_application

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.connector_api.urls")]

ME = "/api/zapier/me"
SEND = "/api/zapier/send-review-request"
TOKEN = "/api/oauth/zapier/token"
REVOKE_TOKEN = "/api/oauth/zapier/revoke_token"
REVOKE = "/api/oauth/zapier/revoke"
BIG = "x" * (1024 * 1024 + 10)


def assert_error(response, status: int, error: str) -> dict:
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["error"] == error
    assert isinstance(body["error_description"], str) and body["error_description"]
    return body


def test_400_invalid_request_names_the_fields(api):
    body = assert_error(api.post(SEND, {"email": "nope"}, format="json"), 400, "invalid_request")
    assert "email" in body["fields"]


def test_401_unauthorized_carries_a_bearer_challenge(api_client):
    response = api_client.get(ME)
    assert_error(response, 401, "unauthorized")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_403_insufficient_scope(api_client, owner):
    access, _ = issue_tokens(owner, scope="read")
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
    assert_error(api_client.post(SEND, {}, format="json"), 403, "insufficient_scope")


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize(
    "path", ["/api/zapier/nope", "/api/unknown-platform/me", "/api/", "/api/zapier/me/"]
)
def test_404_not_found_for_any_unmatched_api_path(settings, api, path, debug):
    settings.DEBUG = debug
    assert_error(api.get(path), 404, "not_found")


@pytest.mark.parametrize("method", ["get", "post", "put", "patch", "delete", "options"])
@pytest.mark.parametrize("path", ["/api/zapier/nope", "/api/unknown-platform/me", "/api/"])
def test_404_not_found_for_every_method_even_with_csrf_checks(path, method):
    """A browser-like client (CSRF enforced, as for any real client): no 403 CSRF failure."""
    client = Client(enforce_csrf_checks=True)
    if method == "get":
        response = client.get(path)
    else:
        body = '{"email": "a@example.com"}'
        response = getattr(client, method)(path, body, content_type="application/json")
    assert_error(response, 404, "not_found")
    assert Client(enforce_csrf_checks=True).head(path).status_code == 404


def test_405_method_not_allowed_lists_the_allowed_methods(api):
    response = api.delete(ME)
    assert_error(response, 405, "method_not_allowed")
    assert "GET" in response["Allow"]


def test_405_on_the_token_endpoint_is_json_too(client):
    response = client.get(TOKEN)
    assert_error(response, 405, "method_not_allowed")
    assert "POST" in response["Allow"]


def test_409_and_422_for_idempotency_conflicts(api):
    api.post(SEND, {"email": "a@example.com"}, format="json", HTTP_IDEMPOTENCY_KEY="key-1")
    reused = api.post(SEND, {"email": "b@example.com"}, format="json", HTTP_IDEMPOTENCY_KEY="key-1")
    assert_error(reused, 422, "idempotency_key_reused")


def test_413_request_too_large_on_json_and_form_endpoints(api, client):
    assert_error(api.post(SEND, BIG, content_type="application/json"), 413, "request_too_large")
    form = post_form(client, TOKEN, {"grant_type": "authorization_code", "code": BIG})
    assert_error(form, 413, "request_too_large")


def test_415_a_json_body_on_the_form_encoded_oauth_endpoints(client):
    application = make_application()
    credentials = {"client_id": application.client_id, "client_secret": CLIENT_SECRET}
    for path, body in ((TOKEN, {"grant_type": "refresh_token"}), (REVOKE_TOKEN, {"token": "x"})):
        response = client.post(path, {**body, **credentials}, content_type="application/json")
        assert_error(response, 415, "unsupported_media_type")


def test_415_a_form_body_on_a_json_endpoint(api):
    assert_error(
        api.post(REVOKE, "token=x", content_type="application/x-www-form-urlencoded"),
        415,
        "unsupported_media_type",
    )


def test_send_review_request_keeps_400_for_a_body_that_is_not_json(api):
    assert_error(api.post(SEND, "a=b", content_type="text/plain"), 400, "invalid_request")


def test_oauth_errors_keep_their_codes_in_the_same_shape(client):
    application = make_application()
    wrong_secret = post_form(
        client,
        TOKEN,
        {
            "grant_type": "refresh_token",
            "refresh_token": "x",
            "client_id": application.client_id,
            "client_secret": "wrong",
        },
    )
    assert_error(wrong_secret, 401, "invalid_client")
    bad_grant = post_form(
        client,
        TOKEN,
        {
            "grant_type": "refresh_token",
            "refresh_token": "x",
            "client_id": application.client_id,
            "client_secret": CLIENT_SECRET,
        },
    )
    assert_error(bad_grant, 400, "invalid_grant")


@pytest.mark.parametrize("debug", [False, True])
def test_500_server_error_shows_no_internals_and_names_the_request_id(settings, caplog, debug):
    settings.DEBUG = debug
    client = Client(raise_request_exception=False)
    with caplog.at_level(logging.ERROR):
        response = client.get("/api/zapier/boom", HTTP_X_REQUEST_ID="req-500-test-1")
    body = assert_error(response, 500, "server_error")
    assert body["request_id"] == response["X-Request-ID"] == "req-500-test-1"
    assert b"hunter2" not in response.content
    assert b"Traceback" not in response.content
    assert "X-RateLimit-Remaining" in response
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR and r.exc_info]
    assert logged, "the exception must be logged with its traceback"
    assert any(r.request_id == "req-500-test-1" for r in logged if hasattr(r, "request_id"))


@pytest.mark.parametrize("debug", [False, True])
def test_an_exception_in_a_middleware_is_a_json_500_under_api(settings, monkeypatch, debug):
    settings.DEBUG = debug

    def broken(self, request):
        raise RuntimeError("middleware internals")

    monkeypatch.setattr(
        "django.contrib.messages.middleware.MessageMiddleware.process_request", broken
    )
    response = Client(raise_request_exception=False).get(ME)
    body = assert_error(response, 500, "server_error")
    assert body["request_id"] == response["X-Request-ID"]
    assert b"middleware internals" not in response.content
    page = Client(raise_request_exception=False).get("/")
    assert page.status_code == 500
    assert page["Content-Type"].startswith("text/html")


@pytest.mark.parametrize("debug", [False, True])
def test_a_disallowed_host_is_a_json_400_under_api(settings, debug):
    settings.DEBUG = debug
    settings.ALLOWED_HOSTS = ["reviews.example.com"]
    response = Client().get(ME, HTTP_HOST="evil.example.net")
    assert_error(response, 400, "invalid_request")


def test_pages_for_people_keep_html_error_pages(client, settings):
    settings.DEBUG = False
    missing = client.get("/no-such-page")
    assert missing.status_code == 404
    assert missing["Content-Type"].startswith("text/html")
    assert b"There is nothing at this address" in missing.content
    crashed = Client(raise_request_exception=False).get("/boom")
    assert crashed.status_code == 500
    assert b"Something went wrong on our side" in crashed.content
    assert b"hunter2" not in crashed.content
    consent_error = client.get("/api/oauth/zapier/authorize", {"client_id": "unknown"})
    assert consent_error.status_code == 400
    assert consent_error["Content-Type"].startswith("text/html")
