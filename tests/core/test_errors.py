"""The one error shape and where it is answered (core.errors): every /api/ error is ``{error,
error_description}`` JSON with the right status, whatever raised it and whatever DEBUG says; pages
for people keep HTML error pages; a server error is mailed to ADMINS. A database or broker that
cannot be reached, or a database connection killed mid-request, is a retryable 503 with
``Retry-After`` (JSON under /api/, a plain page elsewhere), never a 500; nothing is half-written,
so the same request retried afterwards does its work exactly once."""

from __future__ import annotations

import itertools
import logging
import time
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.core import mail
from django.db import connection
from django.test import Client
from django.utils import timezone

from accounts.models import User
from connector_api.idempotency import STALE_AFTER
from connector_api.models import IdempotencyKey
from reviews.models import Contact, ReviewRequest
from tests.oauth_provider.conftest import post_form
from tests.support.oauth import CLIENT_SECRET, issue_tokens, make_application
from tests.support.processes import free_port

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.support.crash_urls")]

ME = "/api/zapier/me"
SEND = "/api/zapier/send-review-request"


@contextmanager
def database_unreachable(tmp_path):
    """The default database is out of reach: on PostgreSQL a closed port (connection refused),
    on SQLite a file in a folder that does not exist (unable to open the database)."""
    connection.close()
    saved = dict(connection.settings_dict)
    if connection.vendor == "postgresql":
        connection.settings_dict.update(HOST="127.0.0.1", PORT=str(free_port()))
    else:
        connection.settings_dict["NAME"] = str(tmp_path / "missing" / "db.sqlite3")
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.update(saved)


def assert_unavailable_json(response) -> None:
    assert response.status_code == 503, response.content[:500]
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"] == "service_unavailable"
    assert response.json()["error_description"]
    assert int(response["Retry-After"]) >= 1


def assert_unavailable_page(response) -> None:
    assert response.status_code == 503, response.content[:500]
    assert response["Content-Type"].startswith("text/html")
    assert b"briefly unavailable" in response.content
    assert int(response["Retry-After"]) >= 1


@pytest.mark.django_db(transaction=True)
def test_api_answers_503_while_the_database_is_unreachable_and_a_retry_then_works(
    api, tmp_path, caplog
):
    body = {"first_name": "Ana", "email": "ana@example.com"}
    with database_unreachable(tmp_path), caplog.at_level(logging.ERROR, logger="core.errors"):
        me = api.get(ME)
        sent = api.post(SEND, body, format="json", HTTP_IDEMPOTENCY_KEY="order-1")
    assert_unavailable_json(me)
    assert_unavailable_json(sent)
    assert any("service unavailable on POST" in r.getMessage() for r in caplog.records)

    retried = api.post(SEND, body, format="json", HTTP_IDEMPOTENCY_KEY="order-1")
    assert retried.status_code == 201
    assert "Idempotent-Replayed" not in retried
    assert Contact.objects.filter(owner=api.owner).count() == 1
    assert ReviewRequest.objects.filter(owner=api.owner).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_page_answers_a_plain_503_while_the_database_is_unreachable(browser, tmp_path):
    browser.raise_request_exception = False
    with database_unreachable(tmp_path):
        assert_unavailable_page(browser.get("/"))
    assert browser.get("/").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_a_database_error_raised_in_a_middleware_is_503_too(monkeypatch, tmp_path, api):
    """Raised outside any view: Django's handler500 gets it (with DEBUG off)."""

    def needs_the_database(self, request):
        User.objects.exists()

    monkeypatch.setattr(
        "django.contrib.messages.middleware.MessageMiddleware.process_request", needs_the_database
    )
    client = Client(raise_request_exception=False)
    with database_unreachable(tmp_path):
        assert_unavailable_page(client.get("/"))
        assert_unavailable_json(client.get(ME, HTTP_AUTHORIZATION=f"Bearer {api.access_token}"))


@pytest.mark.django_db(transaction=True)
def test_a_broker_that_refuses_a_task_is_503(client):
    client.raise_request_exception = False
    assert_unavailable_json(client.get("/api/zapier/queue-task"))
    assert_unavailable_page(client.get("/queue-task"))


# --- A connection killed in the middle of the write (PostgreSQL) ---------------------------------


def terminate_backend(pid: int) -> None:
    """Kill the server process behind a connection, from another connection, and wait until it
    is gone (what a database restart or a failover does to every open connection)."""
    import psycopg

    s = connection.settings_dict
    with psycopg.connect(
        host=s["HOST"] or "127.0.0.1",
        port=s["PORT"] or 5432,
        user=s["USER"] or "postgres",
        password=s["PASSWORD"] or None,
        dbname=s["NAME"],
        autocommit=True,
    ) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            gone = other.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid])
            if gone.fetchone() == (0,):
                return
            time.sleep(0.02)
    raise AssertionError(f"backend {pid} still alive")


class KillAtStatement:
    """Counts the statements run inside a transaction; kills the connection just before the
    ``at``-th one (``None``: only count)."""

    def __init__(self, at: int | None = None) -> None:
        self.at = at
        self.seen = 0

    def __call__(self, execute, sql, params, many, context):
        if connection.in_atomic_block:
            self.seen += 1
            if self.seen == self.at:
                terminate_backend(connection.connection.info.backend_pid)
        return execute(sql, params, many, context)


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres
def test_a_connection_killed_at_any_point_of_the_write_is_503_and_a_retry_creates_one(api):
    def send(n: int, kill: KillAtStatement | None = None):
        body = {"first_name": "Kim", "email": f"kim{n}@example.com"}
        if kill is None:
            return api.post(SEND, body, format="json", HTTP_IDEMPOTENCY_KEY=f"order-{n}")
        with connection.execute_wrapper(kill):
            return api.post(SEND, body, format="json", HTTP_IDEMPOTENCY_KEY=f"order-{n}")

    # Kill before the 1st, 2nd, ... statement of the write's transaction, until a run has
    # fewer statements than that (it then succeeds untouched).
    for n in itertools.count(1):
        killed = KillAtStatement(at=n)
        response = send(n, killed)
        if killed.seen < n:
            assert response.status_code == 201
            break
        assert_unavailable_json(response)
        assert not Contact.objects.filter(email=f"kim{n}@example.com").exists()
        retried = send(n)
        assert retried.status_code == 201, (n, retried.content)
        assert "Idempotent-Replayed" not in retried
        assert Contact.objects.filter(owner=api.owner, email=f"kim{n}@example.com").count() == 1
        assert ReviewRequest.objects.filter(contact__email=f"kim{n}@example.com").count() == 1
    assert n > 2  # the contact and its request, then the stored response: each point was hit
    assert Contact.objects.filter(owner=api.owner).count() == n


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres
def test_a_database_that_goes_down_mid_write_loses_nothing_and_a_retry_creates_one(api):
    """The key was claimed, then the database went away for good (this request cannot even
    release the claim): 503; once it is back, a retry with the key gets 409 while the claim may
    still belong to a live request, then takes it over and creates exactly one contact."""
    body = {"first_name": "Lee", "email": "lee@example.com"}
    saved = dict(connection.settings_dict)

    def database_goes_down(execute, sql, params, many, context):
        if connection.in_atomic_block and saved == connection.settings_dict:
            terminate_backend(connection.connection.info.backend_pid)
            connection.settings_dict.update(HOST="127.0.0.1", PORT=str(free_port()))
        return execute(sql, params, many, context)

    try:
        with connection.execute_wrapper(database_goes_down):
            down = api.post(SEND, body, format="json", HTTP_IDEMPOTENCY_KEY="order-9")
    finally:
        connection.close()
        connection.settings_dict.update(saved)
    assert_unavailable_json(down)
    assert not Contact.objects.filter(owner=api.owner).exists()

    too_soon = api.post(SEND, body, format="json", HTTP_IDEMPOTENCY_KEY="order-9")
    assert too_soon.status_code == 409
    assert too_soon.json()["error"] == "idempotency_in_progress"
    IdempotencyKey.objects.filter(key="order-9").update(
        locked_at=timezone.now() - STALE_AFTER - timedelta(seconds=1)
    )
    retried = api.post(SEND, body, format="json", HTTP_IDEMPOTENCY_KEY="order-9")
    assert retried.status_code == 201
    assert Contact.objects.filter(owner=api.owner).count() == 1
    assert ReviewRequest.objects.filter(owner=api.owner).count() == 1


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


@pytest.mark.urls("tests.support.error_urls")
def test_validation_error_names_each_field_in_description_and_fields(api_client):
    response = api_client.post("/api/validate", {"email": "nope", "delay_hours": -1}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid_request"
    assert "email:" in body["error_description"]
    assert "delay_hours:" in body["error_description"]
    assert set(body["fields"]) == {"email", "delay_hours"}


@pytest.mark.urls("tests.support.error_urls")
def test_malformed_json_is_invalid_request(api_client):
    response = api_client.post("/api/validate", "{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


@pytest.mark.urls("tests.support.error_urls")
def test_wrong_media_type_is_415(api_client):
    response = api_client.post("/api/validate", "a=b", content_type="text/plain")
    assert response.status_code == 415
    assert response.json()["error"] == "unsupported_media_type"


@pytest.mark.urls("tests.support.error_urls")
def test_missing_or_bad_token_is_401_with_bearer_challenge(api_client):
    missing = api_client.post("/api/write")
    api_client.credentials(HTTP_AUTHORIZATION="Bearer not-a-token")
    bad = api_client.post("/api/write")
    for response in (missing, bad):
        assert response.status_code == 401
        assert response.json()["error"] == "unauthorized"
        assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.urls("tests.support.error_urls")
def test_token_without_the_scope_is_403_insufficient_scope(api_client, owner):
    access, _ = issue_tokens(owner, scope="read")
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
    response = api_client.post("/api/write")
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_scope"


@pytest.mark.urls("tests.support.error_urls")
def test_token_with_the_scope_passes(api):
    assert api.post("/api/write").status_code == 200


@pytest.mark.urls("tests.support.error_urls")
def test_method_not_allowed_is_405(api_client):
    response = api_client.get("/api/validate")
    assert response.status_code == 405
    assert response.json()["error"] == "method_not_allowed"


@pytest.mark.urls("tests.support.error_urls")
def test_api_error_keeps_its_code_and_extra_fields(api_client):
    response = api_client.get("/api/conflict")
    assert response.status_code == 409
    assert response.json() == {
        "error": "idempotency_in_progress",
        "error_description": "Still running.",
        "retry_after": 5,
    }


@pytest.mark.urls("tests.support.error_urls")
def test_api_server_errors_are_mailed_to_admins(api_client, settings):
    settings.ADMINS = [("Ops", "ops@example.com")]
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    api_client.post("/api/crash", {"email": "a@example.com", "phone": "+1"}, format="json")
    assert mail.outbox and all(sent.to == ["ops@example.com"] for sent in mail.outbox)
