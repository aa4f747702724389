"""Logging in and out, changing the password, and the limit on login attempts."""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.tokens import default_token_generator
from django.core.management import call_command
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from accounts import throttle
from tests.factories import DEFAULT_PASSWORD, UserFactory

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"


def attempt(client, email: str, password: str, ip: str = "10.1.1.1"):
    return client.post(LOGIN, {"username": email, "password": password}, REMOTE_ADDR=ip)


def test_login_lands_on_the_dashboard_and_logout_on_the_front_page(client):
    UserFactory(email="owner@example.com")
    response = attempt(client, "owner@example.com", DEFAULT_PASSWORD)
    assert response["Location"] == "/"
    assert b"each counted on the day it happened" in client.get("/").content
    assert client.post("/accounts/logout/")["Location"] == "/"
    assert client.get("/portal/apps/").status_code == 302


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


def lock(client, email: str, ip: str) -> None:
    for _ in range(throttle.LOGIN_FAILURES_PER_PAIR):
        attempt(client, email, "guess", ip=ip)
    assert attempt(client, email, DEFAULT_PASSWORD, ip=ip).status_code == 429


def test_a_new_password_set_through_a_reset_link_lifts_the_lock_on_that_network(client):
    owner = UserFactory(email="owner@example.com")
    lock(client, "owner@example.com", "10.6.6.6")
    uid = urlsafe_base64_encode(force_bytes(owner.pk))
    token = default_token_generator.make_token(owner)
    page = client.get(f"/accounts/reset/{uid}/{token}/", follow=True, REMOTE_ADDR="10.6.6.6")
    new = "a fresh and long passphrase 42"
    done = client.post(
        page.redirect_chain[-1][0],
        {"new_password1": new, "new_password2": new},
        REMOTE_ADDR="10.6.6.6",
    )
    assert done.status_code == 302
    assert attempt(client, "owner@example.com", new, ip="10.6.6.6").status_code == 302


def test_an_operator_lifts_a_lock_with_a_command(client):
    UserFactory(email="owner@example.com")
    lock(client, "owner@example.com", "2001:db8:9::1")
    out = io.StringIO()
    call_command("login_unlock", "Owner@example.com", "2001:db8:9::abcd", stdout=out)
    assert "2001:db8:9::/64" in out.getvalue()
    ok = attempt(client, "owner@example.com", DEFAULT_PASSWORD, ip="2001:db8:9::1")
    assert ok.status_code == 302


ADMIN_LOGIN = "/admin/login/"


def admin_attempt(client, email: str, password: str, ip: str = "10.7.7.7"):
    return client.post(
        ADMIN_LOGIN,
        {"username": email, "password": password, "next": "/admin/"},
        REMOTE_ADDR=ip,
    )


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


def test_an_owner_changes_their_password(browser, owner):
    page = browser.get("/accounts/password_change/")
    assert b'aria-current="page">Password</a>' in page.content
    assert page["Cache-Control"] == "no-store"
    wrong = browser.post(
        "/accounts/password_change/",
        {"old_password": "wrong", "new_password1": "x", "new_password2": "x"},
    )
    assert b'id="id_old_password_error"' in wrong.content
    done = browser.post(
        "/accounts/password_change/",
        {
            "old_password": DEFAULT_PASSWORD,
            "new_password1": "another long passphrase 7",
            "new_password2": "another long passphrase 7",
        },
    )
    assert done["Location"] == "/accounts/password_change/done/"
    assert authenticate(username=owner.email, password="another long passphrase 7") == owner
