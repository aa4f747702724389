"""The accounts pages: logging in and out, password reset by e-mail (the same answer for every
address, the mail in the outbox, a link that works once and lifts the login lock), and changing the
password."""

from __future__ import annotations

import re

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import authenticate
from django.contrib.auth.tokens import default_token_generator
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from accounts.tasks import send_password_reset_email
from tests.accounts.conftest import (
    OFFICE,
    RESET,
    attempt,
    lock,
    mails,
    use_up_budget,
)
from tests.factories import DEFAULT_PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


def test_login_lands_on_the_dashboard_and_logout_on_the_front_page(client):
    UserFactory(email="owner@example.com")
    response = attempt(client, "owner@example.com", DEFAULT_PASSWORD)
    assert response["Location"] == "/"
    assert b"each counted on the day it happened" in client.get("/").content
    assert client.post("/accounts/logout/")["Location"] == "/"
    assert client.get("/portal/apps/").status_code == 302


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


NEW_PASSWORD = "a fresh and long passphrase 42"


def test_a_known_and_an_unknown_address_get_the_same_answer(client, queued, outbox):
    UserFactory(email="owner@example.com")
    known = client.post(RESET, {"email": "owner@example.com"})
    unknown = client.post(RESET, {"email": "nobody@example.com"})
    assert known.status_code == unknown.status_code == 302
    assert known["Location"] == unknown["Location"] == "/accounts/password_reset/done/"
    # Both are handed to a worker: the request itself does the same work either way.
    assert queued == [["owner@example.com"], ["nobody@example.com"]]
    queued.run()
    assert [m["To"] for m in mails(outbox)] == ["owner@example.com"]


def test_the_mail_lands_in_the_outbox_and_its_link_sets_a_new_password(client, queued, outbox):
    owner = UserFactory(email="owner@example.com", business_name="Acme Plumbing")
    client.post(RESET, {"email": "OWNER@example.com"})
    queued.run()
    [mail] = mails(outbox)
    assert mail["To"] == "owner@example.com"  # the stored address, not what was typed
    assert mail["Subject"] == "Reset your Review requests password"
    assert mail["From"] == django_settings.DEFAULT_FROM_EMAIL
    body = mail.get_content()
    assert "Hello Acme Plumbing," in body
    link = re.search(r"^(http\S+/accounts/reset/\S+/)$", body, re.MULTILINE)[1]
    assert link.startswith(django_settings.SITE_URL + "/accounts/reset/")

    form_page = client.get(link.removeprefix(django_settings.SITE_URL), follow=True)
    assert b"Choose a new password" in form_page.content
    set_password_url = form_page.redirect_chain[-1][0]  # the token moved to the session
    done = client.post(
        set_password_url, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    )
    assert done["Location"] == "/accounts/reset/done/"
    assert authenticate(username="owner@example.com", password=NEW_PASSWORD) == owner
    assert authenticate(username="owner@example.com", password=DEFAULT_PASSWORD) is None

    again = client.get(link.removeprefix(django_settings.SITE_URL), follow=True)
    assert b"This link does not work any more" in again.content


def test_inactive_owners_and_unusable_passwords_get_no_mail(client, queued, outbox):
    UserFactory(email="gone@example.com", is_active=False)
    sso = UserFactory(email="nopass@example.com")
    sso.set_unusable_password()
    sso.save()
    for address in ("gone@example.com", "nopass@example.com"):
        client.post(RESET, {"email": address})
    queued.run()
    assert mails(outbox) == []


def test_a_broker_outage_says_to_try_again_instead_of_pretending(client, monkeypatch):
    def down(*args, **kwargs):
        raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(send_password_reset_email, "apply_async", down)
    response = client.post(RESET, {"email": "owner@example.com"})
    assert response.status_code == 503
    assert b"We cannot send e-mail just now" in response.content


@pytest.mark.parametrize(
    "path",
    [RESET, "/accounts/password_reset/done/", "/accounts/reset/done/", "/accounts/reset/x/y/"],
)
def test_reset_pages_are_strict_pages(client, path):
    response = client.get(path, follow=True)
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    assert "default-src 'none'" in response["Content-Security-Policy"]
    assert response["Referrer-Policy"] == "no-referrer"


def test_the_login_page_links_to_the_reset(client):
    assert b'href="/accounts/password_reset/"' in client.get("/accounts/login/").content


def test_there_is_no_public_sign_up(client):
    assert client.get("/accounts/signup/").status_code == 404
    assert client.get("/accounts/register/").status_code == 404
    assert b"Accounts are opened by our team." in client.get("/").content


def test_login_page_signs_an_owner_in(client):
    UserFactory(email="owner@example.com")
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    response = client.post(
        "/accounts/login/", {"username": "owner@example.com", "password": DEFAULT_PASSWORD}
    )
    assert response.status_code == 302
    assert client.get("/").context["user"].email == "owner@example.com"
