"""Logging in and out, changing the password, and the limit on login attempts."""

from __future__ import annotations

import pytest
from django.contrib.auth import authenticate

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
    assert b"Review requests added in this period" in client.get("/").content
    assert client.post("/accounts/logout/")["Location"] == "/"
    assert client.get("/portal/apps/").status_code == 302


def test_guessing_is_stopped_after_a_few_attempts_even_with_the_right_password(client):
    UserFactory(email="owner@example.com")
    for _ in range(throttle.LOGIN_PER_ADDRESS_AND_IP):
        assert attempt(client, "owner@example.com", "guess").status_code == 200
    refused = attempt(client, "owner@example.com", DEFAULT_PASSWORD)
    assert refused.status_code == 429
    assert b"Too many login attempts" in refused.content
    assert b'value="owner@example.com"' in refused.content
    assert "_auth_user_id" not in client.session
    # Another network is not blocked by this one's guesses.
    assert attempt(client, "owner@example.com", DEFAULT_PASSWORD, ip="10.2.2.2").status_code == 302


def test_one_network_cannot_try_address_after_address_forever(client):
    for n in range(throttle.LOGIN_PER_IP):
        attempt(client, f"person{n}@example.com", "guess", ip="10.3.3.3")
    UserFactory(email="owner@example.com")
    assert attempt(client, "owner@example.com", DEFAULT_PASSWORD, ip="10.3.3.3").status_code == 429


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
