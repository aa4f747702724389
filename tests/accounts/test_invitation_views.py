"""/accounts/invitation/<token>/: choose a password, join the account, go to the portal; and
what a member meets elsewhere until the pages read through accounts.access."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import SESSION_KEY
from django.test import Client
from django.utils import timezone

from accounts import services
from accounts.models import Invitation, Role, User
from tests.factories import LocationFactory, UserFactory
from tests.support.oauth import make_application

pytestmark = pytest.mark.django_db

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


def test_a_member_gets_no_owner_page_and_connects_apps_for_themselves(client, invitation):
    """The portal's pages read and write as the account: a member reaches none of them until
    they read through accounts.access. The API does: a member approves the consent page for
    themselves (their token reaches their locations only, tests/connector_api)."""
    client.post(url_of(invitation), {"new_password1": PASSWORD, "new_password2": PASSWORD})
    assert client.get("/").status_code == 403
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
