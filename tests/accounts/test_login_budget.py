"""The login throttle's budget per network: a network cycling through addresses that have never
logged in from it gets a bounded number of password checks, while the people who have logged in
from there, and every other network, are unaffected."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.hashers import MD5PasswordHasher
from django.contrib.auth.tokens import default_token_generator
from django.core.management import call_command
from django.test import override_settings
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from accounts import throttle
from tests.factories import DEFAULT_PASSWORD, UserFactory

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"
ADMIN_LOGIN = "/admin/login/"
OFFICE = "10.20.0.1"
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


def attempt(client, email: str, password: str, ip: str):
    return client.post(LOGIN, {"username": email, "password": password}, REMOTE_ADDR=ip)


def admin_attempt(client, email: str, password: str, ip: str):
    return client.post(
        ADMIN_LOGIN, {"username": email, "password": password, "next": "/admin/"}, REMOTE_ADDR=ip
    )


def log_in_once(client, email: str, ip: str, *, admin: bool = False) -> None:
    response = (admin_attempt if admin else attempt)(client, email, DEFAULT_PASSWORD, ip)
    assert response.status_code == 302
    client.post("/admin/logout/" if admin else "/accounts/logout/")


def use_up_budget(client, ip: str, prefix: str = "stranger") -> None:
    """Wrong passwords for ever-changing addresses, each pair far under its own limit."""
    for n in range(budget()):
        assert attempt(client, f"{prefix}{n}@example.com", "guess", ip).status_code == 200


def budget() -> int:
    from django.conf import settings

    return settings.LOGIN_NEW_PAIR_FAILURES_PER_NETWORK


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


def test_a_new_password_set_through_a_reset_link_lets_the_address_in_over_the_budget(client):
    owner = UserFactory(email="owner@example.com")
    use_up_budget(client, OFFICE)
    uid = urlsafe_base64_encode(force_bytes(owner.pk))
    token = default_token_generator.make_token(owner)
    page = client.get(f"/accounts/reset/{uid}/{token}/", follow=True, REMOTE_ADDR=OFFICE)
    new = "a fresh and long passphrase 42"
    done = client.post(
        page.redirect_chain[-1][0], {"new_password1": new, "new_password2": new}, REMOTE_ADDR=OFFICE
    )
    assert done.status_code == 302
    assert attempt(client, "owner@example.com", new, OFFICE).status_code == 302


def test_an_operator_lets_an_address_in_over_the_budget_with_the_unlock_command(client):
    UserFactory(email="owner@example.com")
    use_up_budget(client, OFFICE)
    assert attempt(client, "owner@example.com", DEFAULT_PASSWORD, OFFICE).status_code == 429
    call_command("login_unlock", "owner@example.com", OFFICE, stdout=io.StringIO())
    assert attempt(client, "owner@example.com", DEFAULT_PASSWORD, OFFICE).status_code == 302


def test_a_store_outage_lets_logins_through(client, settings):
    if not settings.REDIS_URL:
        pytest.skip("needs Redis (set REDIS_URL; CI does)")
    UserFactory(email="owner@example.com")
    use_up_budget(client, OFFICE)
    assert attempt(client, "owner@example.com", DEFAULT_PASSWORD, OFFICE).status_code == 429
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    assert attempt(client, "owner@example.com", DEFAULT_PASSWORD, OFFICE).status_code == 302
