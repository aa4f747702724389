"""The Team page (portal.views.team), the owner's only: members with their role and locations,
inviting by e-mail (the e-mail goes out through the e-mail backend), changing a member's role
and locations, removing a member (their session and tokens end at once), pending invitations and
withdrawing one."""

from __future__ import annotations

import email
import re
from email import policy as email_policy

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import Invitation, Location, User
from accounts.services import member_add, member_invite
from accounts.tasks import send_invitation_email
from config.celery import app as celery_app
from tests.support.oauth import issue_tokens
from tests.support.portal_data import member_client, query_count

pytestmark = pytest.mark.django_db

URL = "/portal/team/"


@pytest.fixture
def outbox(settings, tmp_path):
    """Mail goes out through the configured backend: files in OUTBOX_DIR."""
    settings.EMAIL_BACKEND = "providers.outbox.OutboxEmailBackend"
    settings.OUTBOX_DIR = tmp_path
    settings.SITE_URL = "https://reviews.example.com"
    return tmp_path


@pytest.fixture
def worker(monkeypatch):
    """Tasks published after commit, run by ``worker.run()`` as a worker would."""

    class Worker(list):
        def run(self) -> None:
            while self:
                _, args = self.pop(0)
                send_invitation_email.apply(args=args)

    queue = Worker()
    monkeypatch.setattr(
        celery_app, "send_task", lambda name, args=None, **options: queue.append((name, args))
    )
    return queue


def mails(outbox) -> list[email.message.EmailMessage]:
    return [
        email.message_from_bytes(path.read_bytes(), policy=email_policy.default)
        for path in sorted(outbox.glob("*.eml"))
    ]


def test_the_page_lists_members_with_role_and_locations_and_pending_invitations(
    browser, owner, locations, manager, viewer
):
    member_invite(
        account=owner, email="soon@example.com", role="viewer", location_ids=[locations[2].pk]
    )
    response = browser.get(URL)
    assert response.status_code == 200
    html = response.content.decode()
    members = html[html.index('data-testid="members"') : html.index("</table>")]
    assert "manager@example.com" in members and "viewer@example.com" in members
    assert "Manager" in members and "Viewer" in members and "Uptown" in members
    invitations = html[html.index('data-testid="invitations"') :]
    assert "soon@example.com" in invitations and "Airport" in invitations
    assert 'value="manager"' in html and "Downtown" in html  # the invitation form


def test_inviting_sends_the_e_mail_through_the_backend_and_the_link_makes_a_member(
    browser, owner, locations, outbox, worker, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        answer = browser.post(
            URL,
            {
                "email": "New@Example.com",
                "role": "manager",
                "locations": [str(locations[1].pk), str(locations[2].pk)],
            },
        )
    assert answer.status_code == 302 and answer["Location"] == URL
    worker.run()
    [message] = mails(outbox)
    assert message["To"] == "new@example.com"
    assert "as a manager of Uptown, Airport" in message.get_content()
    invitation = Invitation.objects.get(account=owner)
    assert invitation.invited_by == owner
    link = re.search(r"https://reviews\.example\.com(/accounts/invitation/\S+/)", str(message))
    assert link
    joined = Client()
    password = "a long and new passphrase 7"
    joined.post(link[1], {"new_password1": password, "new_password2": password})
    member = User.objects.get(email="new@example.com")
    assert (member.account, member.role) == (owner, "manager")
    assert set(member.locations.all()) == {locations[1], locations[2]}
    assert joined.get("/").status_code == 200


def test_inviting_an_address_that_has_a_login_says_so_and_sends_nothing(
    browser, owner, locations, manager, outbox, worker, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        page = browser.post(
            URL,
            {"email": "manager@example.com", "role": "viewer", "locations": [locations[0].pk]},
        )
    assert page.status_code == 200
    assert "This address already has a login." in page.content.decode()
    assert worker == [] and not Invitation.objects.exists()


def test_another_accounts_location_cannot_be_given(browser, owner, locations, other_owner):
    theirs = Location.objects.get(account=other_owner)
    page = browser.post(
        URL, {"email": "new@example.com", "role": "viewer", "locations": [theirs.pk]}
    )
    assert page.status_code == 200 and "locations" in page.context["form"].errors
    assert not Invitation.objects.exists()


def test_changing_a_members_role_and_locations(browser, owner, locations, manager):
    member = manager.user
    page = browser.get(f"/portal/team/members/{member.pk}/")
    assert page.status_code == 200
    answer = browser.post(
        f"/portal/team/members/{member.pk}/",
        {"role": "viewer", "locations": [locations[0].pk, locations[2].pk]},
    )
    assert answer.status_code == 302
    member.refresh_from_db()
    assert member.role == "viewer"
    assert set(member.locations.all()) == {locations[0], locations[2]}
    # At once: the member now reads Downtown's and Airport's, and writes nothing.
    assert manager.post("/portal/settings/sites/", {"url": "https://g.page/r/x"}).status_code == 403


def test_removing_a_member_ends_their_session_and_tokens_at_once(browser, owner, manager):
    member = manager.user
    access, _ = issue_tokens(member, scope="read")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
    assert api.get("/api/zapier/me").status_code == 200
    assert browser.get(f"/portal/team/members/{member.pk}/remove/").status_code == 200
    answer = browser.post(f"/portal/team/members/{member.pk}/remove/")
    assert answer.status_code == 302
    assert not User.objects.filter(pk=member.pk).exists()
    logged_out = manager.get("/portal/feedback/")
    assert logged_out.status_code == 302 and logged_out["Location"].startswith("/accounts/login/")
    assert api.get("/api/zapier/me").status_code == 401


def test_a_pending_invitation_can_be_withdrawn(browser, owner, locations):
    invitation = member_invite(
        account=owner, email="soon@example.com", role="viewer", location_ids=[locations[1].pk]
    )
    answer = browser.post(f"/portal/team/invitations/{invitation.pk}/withdraw/")
    assert answer.status_code == 302
    assert not Invitation.objects.filter(pk=invitation.pk).exists()
    assert browser.post(f"/portal/team/invitations/{invitation.pk}/withdraw/").status_code == 404


def test_another_accounts_member_or_invitation_is_not_found(browser, other_owner):
    theirs = member_add(
        account=other_owner,
        email="theirs@example.com",
        password="a long member passphrase 42",
        role="manager",
    )
    invitation = member_invite(account=other_owner, email="x@example.com", role="viewer")
    assert browser.get(f"/portal/team/members/{theirs.pk}/").status_code == 404
    assert browser.post(f"/portal/team/members/{theirs.pk}/remove/").status_code == 404
    assert browser.post(f"/portal/team/invitations/{invitation.pk}/withdraw/").status_code == 404
    assert User.objects.filter(pk=theirs.pk).exists()
    assert Invitation.objects.filter(pk=invitation.pk).exists()


def test_members_get_a_403_on_every_team_page(owner, manager, viewer):
    target = viewer.user
    for client in (manager, viewer):
        assert client.get(URL).status_code == 403
        assert client.post(URL, {"email": "x@example.com", "role": "viewer"}).status_code == 403
        assert client.get(f"/portal/team/members/{target.pk}/").status_code == 403
        assert client.post(f"/portal/team/members/{target.pk}/remove/").status_code == 403
    assert User.objects.filter(pk=target.pk).exists() and not Invitation.objects.exists()


def test_the_team_page_costs_the_same_queries_with_more_members(browser, owner, locations):
    member_client(owner, role="manager", locations=locations[:1], email="a@example.com")
    member_invite(account=owner, email="i1@example.com", role="viewer")
    few = query_count(browser, URL)
    for n in range(5):
        member_client(owner, role="viewer", locations=locations, email=f"m{n}@example.com")
        member_invite(
            account=owner,
            email=f"i{n + 2}@example.com",
            role="viewer",
            location_ids=[locations[n % 3].pk],
        )
    assert query_count(browser, URL) == few
