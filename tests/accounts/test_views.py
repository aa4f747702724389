"""The accounts pages: logging in and out, password reset by e-mail (the same answer for every
address, the mail in the outbox, a link that works once and lifts the login lock), changing the
password, and accepting an invitation (choose a password, join the account, land in the portal)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import SESSION_KEY, authenticate
from django.contrib.auth.tokens import default_token_generator
from django.test import Client
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from accounts import services
from accounts.models import Invitation, Role, User
from accounts.tasks import send_password_reset_email
from tests.accounts.conftest import (
    OFFICE,
    RESET,
    attempt,
    lock,
    mails,
    use_up_budget,
)
from tests.factories import DEFAULT_PASSWORD, LocationFactory, UserFactory
from tests.support.oauth import make_application

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


# --- Invitations: /accounts/invitation/<token>/ -----------------------------------------------

PASSWORD = "a long and new passphrase 7"


@pytest.fixture
def invitation():
    owner = UserFactory(business_name="Acme Plumbing")
    found = Invitation.objects.create(account=owner, email="new@example.com", role=Role.MANAGER)
    found.locations.set([LocationFactory(account=owner, name="Uptown")])
    return found


def url_of(invitation) -> str:
    return services.invitation_url(invitation).removeprefix(
        services.invitation_url(invitation).split("/accounts/")[0]
    )


def test_the_page_asks_for_a_password_twice(client, invitation):
    page = client.get(url_of(invitation))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Join Acme Plumbing" in html and "new@example.com" in html and "manager" in html
    assert 'name="new_password1"' in html and 'name="new_password2"' in html
    assert (
        page["Cache-Control"] == "no-store"
        and "frame-ancestors 'none'" in page["Content-Security-Policy"]
    )


def test_joining_logs_the_member_in_and_goes_to_the_portal(client, invitation):
    answer = client.post(url_of(invitation), {"new_password1": PASSWORD, "new_password2": PASSWORD})
    assert answer.status_code == 302 and answer["Location"] == "/"
    member = User.objects.get(email="new@example.com")
    assert client.session[SESSION_KEY] == str(member.pk)
    assert (member.account_id, member.role) == (invitation.account_id, "manager")
    assert [loc.name for loc in member.locations.all()] == ["Uptown"]
    again = Client().get(url_of(invitation))
    assert again.status_code == 410 and "already used" in again.content.decode()


@pytest.mark.parametrize(
    ("first", "second", "error"),
    [
        (PASSWORD, PASSWORD + "x", "The two password fields"),
        ("short", "short", "too short"),
        ("new@example.com", "new@example.com", "too similar"),
    ],
)
def test_a_password_the_validators_refuse_is_asked_again(client, invitation, first, second, error):
    page = client.post(url_of(invitation), {"new_password1": first, "new_password2": second})
    assert page.status_code == 200
    assert error in page.content.decode()
    assert not User.objects.filter(email="new@example.com").exists()


def test_an_expired_or_unknown_link_says_so(client, invitation):
    Invitation.objects.filter(pk=invitation.pk).update(
        created_at=timezone.now() - timedelta(days=7, seconds=1)
    )
    expired = client.get(url_of(invitation))
    assert expired.status_code == 410 and "has expired" in expired.content.decode()
    posted = client.post(url_of(invitation), {"new_password1": PASSWORD, "new_password2": PASSWORD})
    assert posted.status_code == 410 and not User.objects.filter(email="new@example.com").exists()
    assert client.get("/accounts/invitation/not-a-token/").status_code == 404


def test_a_new_member_lands_on_their_dashboard_and_connects_apps_for_themselves(client, invitation):
    """The landing page opens for the member: the portal reads through accounts.access (their
    locations' requests; the account's own settings stay the owner's). A member approves the
    consent page for themselves (their token reaches their locations only,
    tests/connector_api)."""
    answer = client.post(
        url_of(invitation), {"new_password1": PASSWORD, "new_password2": PASSWORD}, follow=True
    )
    assert answer.redirect_chain == [("/", 302)]
    assert answer.status_code == 200 and "Acme Plumbing" in answer.content.decode()
    assert client.get("/portal/settings/").status_code == 403
    app = make_application()
    consent = client.get(
        "/api/oauth/zapier/authorize",
        {"client_id": app.client_id, "response_type": "code", "redirect_uri": app.redirect_uris},
    )
    assert consent.status_code == 200
    assert "At your locations only" in consent.content.decode()
    owner = Client()
    owner.force_login(invitation.account)
    assert owner.get("/portal/settings/").status_code == 200
