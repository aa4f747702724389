"""A database or broker that cannot be reached, or a database connection killed mid-request, is
a retryable 503 with ``Retry-After`` (JSON under /api/, a plain page elsewhere), never a 500;
nothing is half-written, so the same request retried afterwards does its work exactly once."""

from __future__ import annotations

import itertools
import logging
import time
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from accounts.models import User
from connector_api.idempotency import STALE_AFTER
from connector_api.models import IdempotencyKey
from reviews.models import Contact, ReviewRequest
from tests.support.processes import free_port

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.urls("tests.connector_api.urls"),
]

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


def test_a_page_answers_a_plain_503_while_the_database_is_unreachable(browser, tmp_path):
    browser.raise_request_exception = False
    with database_unreachable(tmp_path):
        assert_unavailable_page(browser.get("/"))
    assert browser.get("/").status_code == 200


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
