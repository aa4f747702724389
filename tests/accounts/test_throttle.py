"""The login throttle (accounts.throttle): a limit per address and network, a budget per network
for addresses that have never logged in from it (a bounded number of password checks, while the
people who have logged in from there, and every other network, are unaffected), and the limits on
password-reset requests."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.hashers import MD5PasswordHasher
from django.test import override_settings

from accounts import throttle
from tests.accounts.conftest import (
    ADMIN_LOGIN,
    OFFICE,
    RESET,
    admin_attempt,
    attempt,
    budget,
    use_up_budget,
)
from tests.factories import DEFAULT_PASSWORD, UserFactory

pytestmark = pytest.mark.django_db

ELSEWHERE = "10.30.0.1"
OVER_BUDGET = b"Too many failed login attempts from your network"


class CountingHasher(MD5PasswordHasher):
    """A real hasher (the suite's fast one) that counts its hashing: every password check, of a
    known address or an unknown one, hashes once."""

    algorithm = "counting_md5"
    calls = 0

    def encode(self, password: str, salt: str) -> str:
        type(self).calls += 1
        return super().encode(password, salt)


@pytest.fixture(autouse=True)
def counting_hasher():
    CountingHasher.calls = 0
    with override_settings(PASSWORD_HASHERS=[f"{__name__}.CountingHasher"]):
        yield CountingHasher


def log_in_once(client, email: str, ip: str, *, admin: bool = False) -> None:
    response = (admin_attempt if admin else attempt)(client, email, DEFAULT_PASSWORD, ip)
    assert response.status_code == 302
    client.post("/admin/logout/" if admin else "/accounts/logout/")


def test_a_network_cycling_through_new_addresses_gets_429_without_password_checks(
    client, counting_hasher
):
    use_up_budget(client, OFFICE)
    assert counting_hasher.calls == budget()  # one check per attempt, unknown addresses too
    for n in range(20):
        refused = attempt(client, f"more{n}@example.com", "guess", OFFICE)
        assert refused.status_code == 429
    assert counting_hasher.calls == budget()  # no password checked past the budget
    assert OVER_BUDGET in refused.content
    assert b"Try again in 60 minutes" in refused.content or b"59 minutes" in refused.content
    assert b'value="more19@example.com"' in refused.content
    # A stranger with the right password is refused too: no check, so nothing to learn.
    UserFactory(email="newcomer@example.com")
    assert attempt(client, "newcomer@example.com", DEFAULT_PASSWORD, OFFICE).status_code == 429
    assert "_auth_user_id" not in client.session


def test_an_ipv6_network_is_its_64_for_the_budget(client, counting_hasher):
    for n in range(budget()):
        attempt(client, f"stranger{n}@example.com", "guess", f"2001:db8:7:8::{n + 1:x}")
    refused = attempt(client, "other@example.com", "guess", "2001:db8:7:8:ffff::1")
    assert refused.status_code == 429
    assert counting_hasher.calls == budget()


@pytest.mark.parametrize("store", ["redis", "database"])
def test_who_logged_in_from_the_network_before_still_logs_in_over_its_budget(
    client, settings, counting_hasher, store
):
    if store == "database":
        settings.REDIS_URL = ""  # the embedded default's counters
    elif not settings.REDIS_URL:
        pytest.skip("needs Redis (set REDIS_URL; CI does)")
    UserFactory(email="owner@example.com")
    log_in_once(client, " Owner@Example.com", OFFICE)  # however it was typed
    use_up_budget(client, OFFICE)
    calls = counting_hasher.calls
    # A typo is checked (and counted for the pair only), not refused for the network.
    assert attempt(client, "owner@example.com", "typo", OFFICE).status_code == 200
    assert attempt(client, "owner@example.com", DEFAULT_PASSWORD, OFFICE).status_code == 302
    assert counting_hasher.calls == calls + 2
    client.post("/accounts/logout/")
    # The known pair keeps its own limit: guessing at it is stopped after that many failures
    # (the typo was one).
    for _ in range(throttle.LOGIN_FAILURES_PER_PAIR - 1):
        assert attempt(client, "owner@example.com", "guess", OFFICE).status_code == 200
    assert attempt(client, "owner@example.com", "guess", OFFICE).status_code == 429


def test_other_networks_are_unaffected_by_one_over_its_budget(client):
    UserFactory(email="owner@example.com")
    use_up_budget(client, OFFICE)
    assert attempt(client, "owner@example.com", DEFAULT_PASSWORD, OFFICE).status_code == 429
    # The same owner, never seen on either network, from another network.
    assert attempt(client, "owner@example.com", DEFAULT_PASSWORD, ELSEWHERE).status_code == 302
    client.post("/accounts/logout/")
    # Strangers there are checked as usual.
    assert attempt(client, "stranger0@example.com", "guess", ELSEWHERE).status_code == 200


def test_successful_logins_do_not_use_the_budget(client):
    for n in range(budget() + 5):
        UserFactory(email=f"colleague{n}@example.com")
        log_in_once(client, f"colleague{n}@example.com", OFFICE)
    for n in range(budget()):
        assert attempt(client, f"stranger{n}@example.com", "guess", OFFICE).status_code == 200
    assert attempt(client, "one-more@example.com", "guess", OFFICE).status_code == 429


def test_the_admin_login_shares_the_budget(client, counting_hasher):
    UserFactory(email="staff@example.com", is_staff=True)
    UserFactory(email="other-staff@example.com", is_staff=True)
    log_in_once(client, "staff@example.com", OFFICE, admin=True)
    # Half the flood on each page: one budget.
    for n in range(budget()):
        login = admin_attempt if n % 2 else attempt
        assert login(client, f"stranger{n}@example.com", "guess", OFFICE).status_code == 200
    calls = counting_hasher.calls
    refused = admin_attempt(client, "other-staff@example.com", DEFAULT_PASSWORD, OFFICE)
    assert refused.status_code == 429
    assert OVER_BUDGET in refused.content
    assert b'name="password"' in refused.content  # the admin's own login form
    assert counting_hasher.calls == calls
    # Staff who logged in from here before get in; so do the others from another network.
    ok = admin_attempt(client, "staff@example.com", DEFAULT_PASSWORD, OFFICE)
    assert ok.status_code == 302
    assert ok["Location"] == "/admin/"
    client.post("/admin/logout/")
    elsewhere = admin_attempt(client, "other-staff@example.com", DEFAULT_PASSWORD, ELSEWHERE)
    assert elsewhere.status_code == 302


def test_a_store_outage_lets_logins_through(client, settings):
    if not settings.REDIS_URL:
        pytest.skip("needs Redis (set REDIS_URL; CI does)")
    UserFactory(email="owner@example.com")
    use_up_budget(client, OFFICE)
    assert attempt(client, "owner@example.com", DEFAULT_PASSWORD, OFFICE).status_code == 429
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    assert attempt(client, "owner@example.com", DEFAULT_PASSWORD, OFFICE).status_code == 302


def test_guessing_is_stopped_after_a_few_attempts_even_with_the_right_password(client):
    UserFactory(email="owner@example.com")
    for _ in range(throttle.LOGIN_FAILURES_PER_PAIR):
        assert attempt(client, "owner@example.com", "guess").status_code == 200
    refused = attempt(client, "owner@example.com", DEFAULT_PASSWORD)
    assert refused.status_code == 429
    assert b"Too many login attempts for this address from your network" in refused.content
    assert re.search(rb"Try again in (60|59) minutes", refused.content)
    assert b'value="owner@example.com"' in refused.content
    assert "_auth_user_id" not in client.session
    # However the address is typed, it is the same pair.
    assert attempt(client, " Owner@Example.com", DEFAULT_PASSWORD).status_code == 429
    # Another network is not blocked by this one's guesses.
    assert attempt(client, "owner@example.com", DEFAULT_PASSWORD, ip="10.2.2.2").status_code == 302


def test_successful_logins_are_never_counted(client):
    UserFactory(email="owner@example.com")
    for _ in range(throttle.LOGIN_FAILURES_PER_PAIR * 2):
        assert attempt(client, "owner@example.com", DEFAULT_PASSWORD).status_code == 302
        client.post("/accounts/logout/")
    for _ in range(throttle.LOGIN_FAILURES_PER_PAIR):
        assert attempt(client, "owner@example.com", "guess").status_code == 200
    assert attempt(client, "owner@example.com", "guess").status_code == 429


def test_unknown_addresses_are_locked_the_same_way(client):
    for _ in range(throttle.LOGIN_FAILURES_PER_PAIR):
        assert attempt(client, "nobody@example.com", "guess", ip="10.4.4.4").status_code == 200
    assert attempt(client, "nobody@example.com", "guess", ip="10.4.4.4").status_code == 429


def test_a_network_guessing_at_many_addresses_locks_none_of_its_other_people(client):
    """A shared office address: one person's (or an intruder's) failures on other addresses do
    not stop anyone else there from logging in."""
    for n in range(30):
        attempt(client, f"person{n}@example.com", "guess", ip="10.3.3.3")
    UserFactory(email="owner@example.com")
    assert attempt(client, "owner@example.com", DEFAULT_PASSWORD, ip="10.3.3.3").status_code == 302


def test_an_ipv6_network_is_its_64(client):
    UserFactory(email="owner@example.com")
    for n in range(throttle.LOGIN_FAILURES_PER_PAIR):
        attempt(client, "owner@example.com", "guess", ip=f"2001:db8:5:6::{n + 1:x}")
    assert attempt(client, "owner@example.com", "g", ip="2001:db8:5:6:ffff::1").status_code == 429
    other_64 = attempt(client, "owner@example.com", DEFAULT_PASSWORD, ip="2001:db8:5:7::1")
    assert other_64.status_code == 302


def test_a_locked_attempt_checks_no_password(client, monkeypatch):
    """Each attempt is counted before its password is checked (and taken back on success), so
    the limit bounds the password checks, even of simultaneous attempts."""
    checked = []
    original = throttle.LoginAttempt.finish

    def finish(self, response):
        checked.append(response.status_code)
        return original(self, response)

    monkeypatch.setattr(throttle.LoginAttempt, "finish", finish)
    answers = [
        attempt(client, "owner@example.com", "guess", ip="10.5.5.5").status_code
        for _ in range(throttle.LOGIN_FAILURES_PER_PAIR + 5)
    ]
    assert answers.count(429) == 5
    assert len(checked) == throttle.LOGIN_FAILURES_PER_PAIR


def test_the_admin_login_is_behind_the_same_throttle(client):
    UserFactory(email="staff@example.com", is_staff=True)
    for _ in range(throttle.LOGIN_FAILURES_PER_PAIR):
        assert admin_attempt(client, "staff@example.com", "guess").status_code == 200
    refused = admin_attempt(client, "staff@example.com", DEFAULT_PASSWORD)
    assert refused.status_code == 429
    assert b"Too many login attempts for this address from your network" in refused.content
    assert b'name="password"' in refused.content  # the admin's own login form
    assert "_auth_user_id" not in client.session
    # The owners' login page counts the same pair: it is locked there too.
    assert attempt(client, "staff@example.com", DEFAULT_PASSWORD, ip="10.7.7.7").status_code == 429
    # From another network, staff log in; successes never count.
    for _ in range(throttle.LOGIN_FAILURES_PER_PAIR + 1):
        ok = admin_attempt(client, "staff@example.com", DEFAULT_PASSWORD, ip="10.8.8.8")
        assert ok.status_code == 302
        assert ok["Location"] == "/admin/"
        client.post("/admin/logout/")
    assert client.get(ADMIN_LOGIN).status_code == 200


def test_resets_are_limited_per_address_whatever_the_network(client, queued):
    for n in range(throttle.RESET_PER_ADDRESS):
        ip = f"10.0.0.{n}"
        assert client.post(RESET, {"email": "a@example.com"}, REMOTE_ADDR=ip).status_code == 302
    refused = client.post(RESET, {"email": "A@example.com"}, REMOTE_ADDR="10.0.1.1")
    assert refused.status_code == 429
    assert b"Too many reset requests" in refused.content
    assert b'id="id_email_error"' in refused.content
    assert len(queued) == throttle.RESET_PER_ADDRESS
    assert client.post(RESET, {"email": "b@example.com"}).status_code == 302


def test_resets_are_limited_per_network(client, queued):
    for n in range(throttle.RESET_PER_IP):
        client.post(RESET, {"email": f"person{n}@example.com"}, REMOTE_ADDR="10.9.9.9")
    refused = client.post(RESET, {"email": "one.more@example.com"}, REMOTE_ADDR="10.9.9.9")
    assert refused.status_code == 429
    assert len(queued) == throttle.RESET_PER_IP
    elsewhere = client.post(RESET, {"email": "one.more@example.com"}, REMOTE_ADDR="10.8.8.8")
    assert elsewhere.status_code == 302


def test_an_ipv6_network_is_counted_by_its_64(client, queued):
    for n in range(throttle.RESET_PER_IP):
        ip = f"2001:db8:7:8::{n + 1:x}"
        client.post(RESET, {"email": f"person{n}@example.com"}, REMOTE_ADDR=ip)
    refused = client.post(RESET, {"email": "x@example.com"}, REMOTE_ADDR="2001:db8:7:8:1::1")
    assert refused.status_code == 429
    elsewhere = client.post(RESET, {"email": "x@example.com"}, REMOTE_ADDR="2001:db8:7:9::1")
    assert elsewhere.status_code == 302
