"""Fixtures shared by the whole suite."""

from __future__ import annotations

import time

import pytest
from django.conf import settings as django_settings
from django.test import Client
from django.test.utils import override_settings

from tests.factories import ReviewSiteFactory, UserFactory

# Page tests' fixtures (a real Chromium; the page tests are in tests/e2e/browser/).
from tests.support.browser import chromium, no_js_page, page, phone_page  # noqa: F401
from tests.support.db_template import use_template

# The delivery tests' business (and one without a review site), and the fake providers on
# loopback that sends reach.
from tests.support.delivery import (  # noqa: F401
    business,
    fake,
    outbox_email,
    postmark,
    siteless,
    twilio,
)

# A registered OAuth client (the platform's app).
from tests.support.oauth import application  # noqa: F401

# A webhook receiver on loopback, and the setting that lets hooks reach it.
from tests.support.webhook_receiver import allow_loopback, receiver  # noqa: F401


def pytest_report_header(config):
    db = django_settings.DATABASES["default"]
    broker = "redis" if django_settings.REDIS_URL else "filesystem (embedded)"
    name = db.get("TEST", {}).get("NAME") or f"test_{db['NAME']}"  # what the tests use
    return f"database: {db['ENGINE'].rsplit('.', 1)[-1]} ({name}); broker: {broker}"


def pytest_collection_modifyitems(config, items):
    """Skip tests whose backing service is not configured (CI configures both)."""
    vendor = django_settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    skip_pg = pytest.mark.skip(reason="needs PostgreSQL (set DATABASE_URL; CI does)")
    skip_redis = pytest.mark.skip(reason="needs Redis (set REDIS_URL; CI does)")
    for item in items:
        if "postgres" in item.keywords and vendor != "postgresql":
            item.add_marker(skip_pg)
        if "redis" in item.keywords and not django_settings.REDIS_URL:
            item.add_marker(skip_redis)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings, request):
    """pytest-django's test database settings (a worker's ``_gwN`` name); in a parallel run on
    PostgreSQL, a copy of the run's migrated template (tests/support/db_template.py)."""
    use_template(request.config)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker, request):
    """pytest-django's test database, and at the end no session left on it but ours.

    PostgreSQL refuses to drop a database while another session is connected to it, and
    pytest-django turns that refusal into a warning: the database stays, and the next run on
    the same name (CI's fuzz step) cannot create it. A session still open at the end is a
    thread or process a test left behind; wait for it (it may be closing), then end it and say
    which it was."""
    yield
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock():
        left = _other_sessions(connection, wait=10)
        if left:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = ANY(%s)",
                    [[pid for pid, *_ in left]],
                )
            request.node.warn(
                pytest.PytestWarning(f"sessions left on the test database, ended: {left!r}")
            )


def _other_sessions(connection, *, wait: float) -> list[tuple]:
    """Client sessions on this connection's database other than its own, after up to ``wait``
    seconds for them to end: (pid, application name, state, started, last statement)."""
    deadline = time.monotonic() + wait
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pid, application_name, state, backend_start::text, left(query, 300)"
                " FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
            )
            rows = cursor.fetchall()
        if not rows or time.monotonic() > deadline:
            return rows
        time.sleep(0.5)


@pytest.fixture(autouse=True, scope="session")
def _test_settings(tmp_path_factory):
    """Static files without a collectstatic manifest; outgoing files in a temporary outbox;
    a fast password hasher first (same code path; production keeps PBKDF2, ~0.4 s per check,
    which the suite would pay thousands of times). Processes started by tests keep PBKDF2."""
    outbox = tmp_path_factory.mktemp("outbox")
    with override_settings(
        PASSWORD_HASHERS=[
            "django.contrib.auth.hashers.MD5PasswordHasher",
            *django_settings.PASSWORD_HASHERS,
        ],
        STORAGES={
            **django_settings.STORAGES,
            "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
        },
        OUTBOX_DIR=outbox,
        EMAIL_FILE_PATH=str(outbox),
    ):
        yield


@pytest.fixture
def owner(db):
    """A business as it normally is: with a review site (without one, nothing is sent)."""
    owner = UserFactory()
    ReviewSiteFactory(owner=owner)
    return owner


@pytest.fixture
def staff(db):
    """A client logged in as a superuser (the back office's tests)."""
    client = Client()
    client.force_login(UserFactory(is_staff=True, is_superuser=True, email="staff@example.com"))
    return client


@pytest.fixture
def other_owner(db):
    other = UserFactory()
    ReviewSiteFactory(owner=other)
    return other


@pytest.fixture
def api_client():
    from rest_framework.test import APIClient

    return APIClient()


@pytest.fixture
def api(owner):
    """An API client authenticated as ``owner`` with a bearer token of scope ``read write``."""
    from rest_framework.test import APIClient

    from tests.support.oauth import issue_tokens

    access, _ = issue_tokens(owner, scope="read write")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
    client.owner = owner
    client.access_token = access
    return client


@pytest.fixture(autouse=True, scope="session")
def _patient_rate_limit_store():
    """The rate limiter's Redis calls wait up to 2 s in the suite's own process, not 0.1 s.

    Past its timeout the limiter takes Redis for dead and serves requests unlimited; a test that
    expects a 429 then gets a 200. 0.1 s is generous for a healthy Redis on a quiet server, but
    the suite runs in parallel workers on a busy machine, where a process can wait longer than
    that for a core. A dead Redis is still dead at once: the tests that need one use a port
    nobody listens on or a killed server (connection refused). Processes that tests start keep
    the service's 0.1 s."""
    from core import ratelimit_store

    patch = pytest.MonkeyPatch()
    patch.setattr(ratelimit_store, "REDIS_TIMEOUT_SECONDS", 2.0)
    yield
    patch.undo()


@pytest.fixture(autouse=True)
def _own_rate_limit_buckets(settings):
    """Each test counts rate limits under its own key prefix: Redis counters outlive a test (and a
    run), and one test's requests must not use up another's limit. Nor may one test's Redis
    failure: the process-wide limiter skips Redis for 5 s after one, so the circuit starts
    closed in every test."""
    import uuid

    from core import ratelimit_store

    settings.RATE_LIMIT_KEY_PREFIX = f"rr:rl:test:{uuid.uuid4().hex[:12]}"
    limiter = ratelimit_store._limiter
    if limiter is not None and isinstance(limiter.store, ratelimit_store.RedisStore):
        limiter.store._open_until = 0.0


@pytest.fixture
def browser(owner) -> Client:
    """A Django test client logged in as ``owner`` through the real session."""
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def other_browser(other_owner) -> Client:
    client = Client()
    client.force_login(other_owner)
    return client
