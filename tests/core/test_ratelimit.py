"""Rate limits (core.ratelimit): headers on every /api/ response, exact 429 at request N+1, buckets
kept apart, checked before any work, window reset, and failing open when Redis is down (the counter
stores themselves: tests/core/test_ratelimit_store.py; through a real gunicorn:
tests/e2e/processes/test_ratelimit.py)."""

from __future__ import annotations

import itertools
import time
from datetime import timedelta

import pytest
import time_machine
from django.test import Client
from oauth2_provider.models import get_access_token_model, get_application_model
from rest_framework.test import APIClient

from connector_api.models import IdempotencyKey
from core import ratelimit_store
from core.ratelimit_store import RateLimiter, RedisStore
from reviews.models import Contact, ReviewRequest
from tests.oauth_provider.conftest import OAuthFlow, basic_auth, post_form
from tests.support.oauth import CLIENT_SECRET, issue_tokens, make_application
from tests.support.private_servers import private_redis

pytestmark = pytest.mark.django_db

ME = "/api/zapier/me"
SEND = "/api/zapier/send-review-request"
TOKEN = "/api/oauth/zapier/token"
REVOKE_TOKEN = "/api/oauth/zapier/revoke_token"
REVOKE = "/api/oauth/zapier/revoke"

_addresses = itertools.count(1)


@pytest.fixture
def client_ip():
    """A client address of this test's own (REMOTE_ADDR for Django's test clients)."""
    n = next(_addresses)
    return f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}"


@pytest.fixture
def limit(settings):
    """A small hourly limit, so that tests can reach it."""
    settings.RATE_LIMIT_PER_HOUR = 3
    return 3


def rate_headers(response) -> tuple[int, int, int]:
    return (
        int(response["X-RateLimit-Limit"]),
        int(response["X-RateLimit-Remaining"]),
        int(response["X-RateLimit-Reset"]),
    )


def bearer(token: str, **extra) -> APIClient:
    client = APIClient(**extra)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def _requests(owner):
    """(name, expected status, request) for each kind of /api/ answer."""
    access, _ = issue_tokens(owner, scope="read write")
    read_only, _ = issue_tokens(owner, scope="read")
    api = bearer(access)
    anonymous = APIClient()
    application = make_application()
    return [
        ("me 200", 200, lambda: api.get(ME)),
        ("send 201", 201, lambda: api.post(SEND, {"email": "a@example.com"}, format="json")),
        ("send 400", 400, lambda: api.post(SEND, {"email": "nope"}, format="json")),
        ("me 401 without token", 401, lambda: anonymous.get(ME)),
        ("me 401 bad token", 401, lambda: bearer("not-a-token").get(ME)),
        ("send 403 scope", 403, lambda: bearer(read_only).post(SEND, {}, format="json")),
        ("404 unknown route", 404, lambda: api.get("/api/zapier/nope")),
        ("404 unknown platform", 404, lambda: api.get("/api/unknown-platform/me")),
        ("405", 405, lambda: api.delete(ME)),
        (
            "413",
            413,
            lambda: api.post(SEND, "x" * (1024 * 1024 + 10), content_type="application/json"),
        ),
        ("415 token json", 415, lambda: anonymous.post(TOKEN, {}, format="json")),
        (
            "token 400",
            400,
            lambda: post_form(
                Client(),
                TOKEN,
                {
                    "grant_type": "authorization_code",
                    "code": "bogus",
                    "client_id": application.client_id,
                    "client_secret": CLIENT_SECRET,
                },
            ),
        ),
        (
            "token 401",
            401,
            lambda: post_form(
                Client(),
                TOKEN,
                {"grant_type": "refresh_token", "refresh_token": "x", "client_id": "nobody"},
            ),
        ),
        (
            "revoke_token 200",
            200,
            lambda: post_form(
                Client(),
                REVOKE_TOKEN,
                {
                    "token": "x",
                    "client_id": application.client_id,
                    "client_secret": CLIENT_SECRET,
                },
            ),
        ),
        ("revoke 401", 401, lambda: anonymous.post(REVOKE)),
        ("schema 200", 200, lambda: anonymous.get("/api/schema/")),
    ]


def test_every_api_response_carries_the_rate_limit_headers(owner):
    now = time.time()
    for name, status, send in _requests(owner):
        response = send()
        answered = time.time()
        assert response.status_code == status, (name, response.content[:300])
        limit, remaining, reset = rate_headers(response)
        if {"token", "revoke_token"} & set(name.split()[:2]):
            # The token endpoints show their fuller bucket of failed client authentications
            # (only the one 401 above counted: in its client's and this address's buckets).
            assert limit == 100, name
            assert 99 <= remaining <= 100, name
        else:
            assert limit == 5000, name
            assert 0 <= remaining < 5000, name
        assert now < reset <= answered + 3600 + 1, name


def test_a_429_carries_the_headers_and_retry_after(api, limit):
    for _ in range(limit):
        api.get(ME)
    response = api.get(ME)
    assert response.status_code == 429
    assert rate_headers(response)[:2] == (limit, 0)
    assert response["Retry-After"].isdigit()


def test_request_n_plus_one_is_429_with_remaining_zero(api, limit):
    before = time.time()
    responses = [api.get(ME) for _ in range(limit + 2)]
    assert [r.status_code for r in responses] == [200, 200, 200, 429, 429]
    assert [r["X-RateLimit-Remaining"] for r in responses] == ["2", "1", "0", "0", "0"]
    resets = {int(r["X-RateLimit-Reset"]) for r in responses}
    assert len(resets) == 1  # one window
    reset = resets.pop()
    assert before + 3600 - 1 <= reset <= time.time() + 3600 + 1
    too_many = responses[limit]
    retry_after = int(too_many["Retry-After"])
    assert 3590 <= retry_after <= 3600
    assert too_many.json() == {
        "error": "rate_limit_exceeded",
        "error_description": (
            f"Rate limit of 3 requests per hour exceeded; retry after {retry_after} seconds."
        ),
    }
    assert too_many["Content-Type"] == "application/json"


def test_a_429_is_answered_before_the_view_does_anything(api, limit):
    for _ in range(limit):
        api.get(ME)
    response = api.post(
        SEND, {"email": "jane@example.com"}, format="json", HTTP_IDEMPOTENCY_KEY="order-1"
    )
    assert response.status_code == 429
    assert not Contact.objects.exists()
    assert not ReviewRequest.objects.exists()
    assert not IdempotencyKey.objects.exists()


def test_a_429_is_safe_to_retry_once_the_window_ends(settings, owner, limit):
    settings.REDIS_URL = ""  # the database store follows the (travelling) clock
    api = bearer(issue_tokens(owner, expires_in=3 * 3600)[0])  # outlives the window
    with time_machine.travel(time.time(), tick=False) as clock:
        for _ in range(limit):
            api.get(ME)
        refused = api.post(
            SEND, {"email": "jane@example.com"}, format="json", HTTP_IDEMPOTENCY_KEY="k1"
        )
        assert refused.status_code == 429
        clock.shift(timedelta(seconds=int(refused["Retry-After"])))
        retried = api.post(
            SEND, {"email": "jane@example.com"}, format="json", HTTP_IDEMPOTENCY_KEY="k1"
        )
    assert retried.status_code == 201
    assert "Idempotent-Replayed" not in retried
    assert rate_headers(retried)[1] == limit - 1
    assert ReviewRequest.objects.count() == 1


def test_the_window_resets_after_an_hour(settings, owner, limit):
    settings.REDIS_URL = ""
    api = bearer(issue_tokens(owner, expires_in=3 * 3600)[0])
    with time_machine.travel(time.time(), tick=False) as clock:
        first = api.get(ME)
        for _ in range(limit):
            api.get(ME)
        assert api.get(ME).status_code == 429
        clock.shift(timedelta(seconds=3599))
        assert api.get(ME).status_code == 429
        clock.shift(timedelta(seconds=1))
        fresh = api.get(ME)
    assert fresh.status_code == 200
    assert rate_headers(fresh)[1] == limit - 1
    assert rate_headers(fresh)[2] == rate_headers(first)[2] + 3600


@pytest.mark.redis
def test_the_redis_window_ends_with_its_key(settings, api, limit):
    settings.RATE_LIMIT_WINDOW_SECONDS = 1
    for _ in range(limit):
        api.get(ME)
    assert api.get(ME).status_code == 429
    time.sleep(1.1)
    again = api.get(ME)
    assert again.status_code == 200
    assert rate_headers(again)[1] == limit - 1


def test_users_are_counted_apart_and_all_of_a_users_tokens_together(owner, other_owner, limit):
    first, _ = issue_tokens(owner, application=make_application())
    second, _ = issue_tokens(owner, application=make_application())
    others, _ = issue_tokens(other_owner)
    assert bearer(first).get(ME).status_code == 200
    assert bearer(second).get(ME).status_code == 200
    assert bearer(first).get(ME).status_code == 200
    assert bearer(second).get(ME).status_code == 429
    other = bearer(others).get(ME)
    assert other.status_code == 200
    assert rate_headers(other)[1] == limit - 1


def test_requests_without_a_valid_token_count_per_ip(api, limit, client_ip):
    here = APIClient(REMOTE_ADDR=client_ip)
    answers = [here.get(ME).status_code for _ in range(limit)]
    assert answers == [401] * limit
    # An invalid token counts in the same IP bucket, and its 401 becomes a 429.
    with_bad_token = bearer("not-a-token", REMOTE_ADDR=client_ip).get(ME)
    assert with_bad_token.status_code == 429
    assert here.get("/api/zapier/nope").status_code == 429
    # Another address has its own bucket; a valid token from this address, its owner's.
    elsewhere = APIClient(REMOTE_ADDR="192.0.2.77").get(ME)
    assert (elsewhere.status_code, rate_headers(elsewhere)[1]) == (401, limit - 1)
    api.defaults["REMOTE_ADDR"] = client_ip
    assert api.get(ME).status_code == 200


def test_behind_proxies_the_forwarded_address_is_the_client(settings, limit):
    settings.NUM_PROXIES = 1
    proxy = "10.0.0.1"

    def from_client(address: str, spoofed: str = "203.0.113.9"):
        return APIClient(REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=f"{spoofed}, {address}").get(ME)

    for _ in range(limit):
        from_client("198.51.100.1")
    assert from_client("198.51.100.1", spoofed="1.1.1.1").status_code == 429
    assert from_client("198.51.100.2").status_code == 401
    settings.NUM_PROXIES = 0  # then the header is ignored: the proxy is the client
    assert rate_headers(from_client("198.51.100.3"))[1] == limit - 1


@pytest.fixture
def failure_limit(settings):
    settings.OAUTH_CLIENT_AUTH_FAILURES_PER_HOUR = 3
    return 3


def _token_request(client, application, *, secret, code="bogus", **extra):
    return post_form(
        client,
        TOKEN,
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": "https://zapier.com/dashboard/auth/oauth/return/App123CLIAPI/",
            "client_id": application.client_id,
            "client_secret": secret,
        },
        **extra,
    )


def test_the_token_endpoint_counts_only_failed_client_authentications(
    owner, limit, failure_limit, client_ip
):
    flow = OAuthFlow(owner, make_application())
    server = Client(REMOTE_ADDR=client_ip)
    # Requests whose client authenticates are never counted, whatever their answer.
    answers = [_token_request(server, flow.application, secret=CLIENT_SECRET) for _ in range(10)]
    assert [r.status_code for r in answers] == [400] * 10
    assert rate_headers(answers[-1])[:2] == (failure_limit, failure_limit)
    # Wrong secrets are: 401 up to the limit, then 429 (at once, with Retry-After).
    wrong = [_token_request(server, flow.application, secret="wrong") for _ in range(5)]
    assert [r.status_code for r in wrong] == [401] * failure_limit + [429, 429]
    assert [rate_headers(r)[1] for r in wrong] == [2, 1, 0, 0, 0]
    assert wrong[-1].json()["error"] == "rate_limit_exceeded"
    assert "right client secret" in wrong[-1].json()["error_description"]
    assert wrong[-1]["Retry-After"].isdigit()
    assert wrong[-1]["Cache-Control"] == "no-store"
    # The right secret from the same address still gets its token, by form body or Basic.
    code = flow.code()
    issued = _token_request(server, flow.application, secret=CLIENT_SECRET, code=code)
    assert issued.status_code == 200, issued.content
    basic = post_form(
        server,
        TOKEN,
        {"grant_type": "refresh_token", "refresh_token": issued.json()["refresh_token"]},
        HTTP_AUTHORIZATION=basic_auth(flow.application.client_id, CLIENT_SECRET),
    )
    assert basic.status_code == 200, basic.content
    assert get_access_token_model().objects.count() == 1


def test_past_the_limit_a_secret_stored_in_clear_is_still_accepted(failure_limit, client_ip):
    Application = get_application_model()
    application = Application(
        name="Clear",
        client_id="clear-secret-client",
        client_secret="a-clear-secret",
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="https://zapier.com/dashboard/auth/oauth/return/App123CLIAPI/",
    )
    application.hash_client_secret = False
    application.save()
    server = Client(REMOTE_ADDR=client_ip)
    for _ in range(failure_limit + 1):
        _token_request(server, application, secret="wrong")
    assert _token_request(server, application, secret="wrong").status_code == 429
    assert _token_request(server, application, secret="a-clear-secret").status_code == 400
    basic = post_form(
        server,
        TOKEN,
        {"grant_type": "authorization_code", "code": "bogus", "client_secret": "wrong"},
        HTTP_AUTHORIZATION=basic_auth(application.client_id, "a-clear-secret"),
    )
    assert basic.status_code == 400  # authenticated by Basic (the grant itself is bad)


def test_client_failures_count_per_client_and_per_network(failure_limit, client_ip):
    target, other = make_application(), make_application(name="Other")
    for n in range(failure_limit):  # one client, from several addresses
        _token_request(Client(REMOTE_ADDR=f"198.51.100.{n + 1}"), target, secret="wrong")
    refused = _token_request(Client(REMOTE_ADDR="198.51.100.99"), target, secret="wrong")
    assert refused.status_code == 429  # the client's bucket is full, from any address
    assert _token_request(Client(REMOTE_ADDR=client_ip), other, secret="wrong").status_code == 401
    # One IPv6 /64 is one network: any client's failures from it count together.
    for n in range(failure_limit):
        client = make_application(name=f"Client {n}")
        _token_request(Client(REMOTE_ADDR=f"2001:db8:1:2::{n + 1}"), client, secret="wrong")
    third = make_application(name="Third")
    assert (
        _token_request(Client(REMOTE_ADDR="2001:db8:1:2::ff"), third, secret="wrong").status_code
        == 429
    )
    assert (
        _token_request(Client(REMOTE_ADDR="2001:db8:1:3::1"), third, secret="wrong").status_code
        == 401
    )
    # Unknown client ids are failures too.
    nobody = post_form(
        Client(REMOTE_ADDR="2001:db8:1:2::1"),
        TOKEN,
        {"grant_type": "refresh_token", "refresh_token": "x", "client_id": "nobody"},
    )
    assert nobody.status_code == 429


def test_rfc7009_revocation_counts_only_failed_client_authentications(
    limit, failure_limit, client_ip
):
    application = make_application()
    server = Client(REMOTE_ADDR=client_ip)
    body = {"token": "x", "client_id": application.client_id, "client_secret": CLIENT_SECRET}
    answers = [post_form(server, REVOKE_TOKEN, body).status_code for _ in range(limit + 3)]
    assert answers == [200] * (limit + 3)
    wrong = {**body, "client_secret": "wrong"}
    answers = [post_form(server, REVOKE_TOKEN, wrong).status_code for _ in range(4)]
    assert answers == [401] * failure_limit + [429]
    assert post_form(server, REVOKE_TOKEN, body).status_code == 200


@pytest.fixture
def redis_server():
    """A Redis server of this test's own, which the test may kill (never the shared one)."""
    with private_redis() as server:
        yield server


def test_with_redis_down_the_api_keeps_serving_and_readyz_counts_it(
    monkeypatch, redis_server, api, client, limit
):
    monkeypatch.setattr(ratelimit_store, "REDIS_BACKOFF_SECONDS", 0.2)
    # The limiter on the private server (the broker stays where it was: /readyz stays ready).
    monkeypatch.setattr(ratelimit_store, "_limiter", RateLimiter(RedisStore(redis_server.url)))
    assert rate_headers(api.get(ME))[1] == limit - 1

    redis_server.kill()
    served = [api.get(ME) for _ in range(limit + 2)]
    assert [r.status_code for r in served] == [200] * (limit + 2)  # fail open: no 429, no 500
    assert all(rate_headers(r)[:2] == (limit, limit) for r in served)
    ready = client.get("/readyz")
    assert ready.status_code == 200
    status = ready.json()["rate_limiter"]
    assert status["store"] == "redis"
    assert status["failing"] is True
    assert status["unlimited_requests"] == limit + 2
    assert "rate_limiter" not in ready.json().get("failing", [])

    redis_server.start()  # Redis comes back (empty): counting starts again
    time.sleep(0.3)  # past the back-off
    counted = api.get(ME)
    assert rate_headers(counted)[1] == limit - 1
    assert client.get("/readyz").json()["rate_limiter"]["failing"] is False


def test_readyz_reports_the_rate_limiter_store(client):
    body = client.get("/readyz").json()
    assert body["rate_limiter"]["store"] in ("redis", "database")
    assert body["rate_limiter"]["unlimited_requests"] >= 0


def test_the_consent_page_counts_per_ip_and_says_429_in_html(limit, client_ip):
    browser = Client(REMOTE_ADDR=client_ip)
    pages = [browser.get("/api/oauth/zapier/authorize") for _ in range(limit + 1)]
    assert [p.status_code for p in pages[:limit]] != [429] * limit
    refused = pages[limit]
    assert refused.status_code == 429
    assert refused["Content-Type"].startswith("text/html")
    assert refused["Retry-After"].isdigit()
    assert rate_headers(refused)[1] == 0
