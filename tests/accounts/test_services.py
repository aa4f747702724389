"""accounts.services: locations (the default among them), members, invitations by e-mail."""

from __future__ import annotations

import email
import re
from datetime import UTC, datetime, timedelta
from email import policy as email_policy

import pytest
from django.contrib.auth import authenticate
from django.core.exceptions import ValidationError
from django.test import Client
from oauth2_provider.models import get_access_token_model
from rest_framework.test import APIClient

from accounts import services
from accounts.models import Invitation, Location, Role, User
from accounts.tasks import send_invitation_email
from config.celery import app as celery_app
from reviews.models import ReviewRequest, ReviewSite
from tests.factories import (
    ContactFactory,
    LocationFactory,
    ReviewRequestFactory,
    ReviewSiteFactory,
    UserFactory,
    first_location,
)
from tests.support.oauth import issue_tokens

pytestmark = pytest.mark.django_db

PASSWORD = "a long and new passphrase 7"
T0 = datetime(2026, 6, 10, 16, 0, tzinfo=UTC)


@pytest.fixture
def owner():
    return UserFactory(business_name="Acme Plumbing", time_zone="America/Chicago")


@pytest.fixture
def locations(owner):
    first = first_location(owner, name="Downtown")
    return [first, *(LocationFactory(account=owner, name=name) for name in ("Uptown", "Airport"))]


def names(owner) -> list[str]:
    return list(
        Location.objects.filter(account=owner)
        .order_by("position", "created_at")
        .values_list("name", flat=True)
    )


# --- locations ------------------------------------------------------------------------------------


def test_a_new_location_goes_last_in_the_accounts_time_zone_unless_given(owner, locations):
    made = services.location_create(account=owner, name="Harbour")
    assert (made.position, made.time_zone) == (3, "America/Chicago")
    west = services.location_create(account=owner, name="West", time_zone="America/Denver")
    assert west.time_zone == "America/Denver"
    assert names(owner) == ["Downtown", "Uptown", "Airport", "Harbour", "West"]


@pytest.mark.parametrize(
    ("name", "time_zone", "field"),
    [("Downtown", None, "__all__"), ("New", "Nowhere/Else", "time_zone"), ("", None, "name")],
)
def test_a_location_is_refused_whole(owner, locations, name, time_zone, field):
    with pytest.raises(ValidationError) as error:
        services.location_create(account=owner, name=name, time_zone=time_zone)
    assert field in error.value.message_dict
    assert Location.objects.filter(account=owner).count() == 3


def test_a_member_is_not_an_account(owner):
    member = UserFactory(account=owner, role=Role.MANAGER)
    with pytest.raises(ValueError, match="member"):
        services.location_create(account=member, name="Mine")


def test_a_location_is_renamed_and_moved_to_another_time_zone(owner, locations):
    services.location_update(
        account=owner, location_id=locations[1].pk, name="Midtown", time_zone="Europe/London"
    )
    locations[1].refresh_from_db()
    assert (locations[1].name, locations[1].time_zone) == ("Midtown", "Europe/London")
    with pytest.raises(Location.DoesNotExist):
        services.location_update(account=UserFactory(), location_id=locations[1].pk, name="X")


def test_moving_another_location_first_makes_it_the_default_and_old_rows_stay_put(
    owner, locations, monkeypatch
):
    """Rows with no location are the default's: before the default changes they are pinned
    to the old default (in batches), so no request or site moves with it."""
    downtown, uptown, _ = locations
    monkeypatch.setattr("reviews.services.business.PIN_BATCH", 2)
    unplaced = [ReviewRequestFactory(contact=ContactFactory(owner=owner)) for _ in range(5)]
    at_uptown = ReviewRequestFactory(contact=ContactFactory(owner=owner), location=uptown)
    site = ReviewSiteFactory(owner=owner)  # no location: the default's
    stranger = ReviewRequestFactory()  # another account's, never touched
    updated = {r.pk: r.updated_at for r in unplaced}

    ordered = services.location_move(account=owner, location_id=uptown.pk, position=0)

    assert [loc.name for loc in ordered] == names(owner) == ["Uptown", "Downtown", "Airport"]
    for request in unplaced:
        request.refresh_from_db()
        assert (request.location_id, request.updated_at) == (downtown.pk, updated[request.pk])
    assert ReviewRequest.objects.get(pk=at_uptown.pk).location_id == uptown.pk
    assert ReviewSite.objects.get(pk=site.pk).location_id == downtown.pk
    assert ReviewRequest.objects.get(pk=stranger.pk).location_id is None


def test_moving_without_changing_the_default_pins_nothing(owner, locations):
    unplaced = ReviewRequestFactory(contact=ContactFactory(owner=owner))
    services.location_move(account=owner, location_id=locations[2].pk, position=1)
    assert names(owner) == ["Downtown", "Airport", "Uptown"]
    unplaced.refresh_from_db()
    assert unplaced.location_id is None
    services.location_move(account=owner, location_id=locations[0].pk, position=99)
    assert names(owner) == ["Airport", "Uptown", "Downtown"]
    unplaced.refresh_from_db()
    assert unplaced.location_id == locations[0].pk  # the default moved away: pinned first


def test_a_location_with_requests_or_the_last_one_is_not_deleted(owner, locations):
    downtown, uptown, airport = locations
    ReviewRequestFactory(contact=ContactFactory(owner=owner), location=uptown)
    with pytest.raises(ValidationError, match="has review requests"):
        services.location_delete(account=owner, location_id=uptown.pk)
    ReviewSiteFactory(owner=owner, location=airport)
    services.location_delete(account=owner, location_id=airport.pk)
    assert names(owner) == ["Downtown", "Uptown"]
    assert not ReviewSite.objects.filter(owner=owner).exists()  # its sites went with it
    # The default's requests with no location become its own, and so keep it.
    ReviewRequestFactory(contact=ContactFactory(owner=owner))
    with pytest.raises(ValidationError, match="has review requests"):
        services.location_delete(account=owner, location_id=downtown.pk)
    alone = UserFactory()
    only = Location.objects.get(account=alone)
    with pytest.raises(ValidationError, match="at least one location"):
        services.location_delete(account=alone, location_id=only.pk)


def test_an_account_without_a_location_gets_its_first_on_first_use():
    made_by_hand = UserFactory(is_staff=True, business_name="Acme", time_zone="America/Chicago")
    assert not Location.objects.filter(account=made_by_hand).exists()
    first = services.location_default(account=made_by_hand)
    assert (first.name, first.time_zone, first.position) == ("Acme", "America/Chicago", 0)
    assert services.location_default(account=made_by_hand) == first


# --- members --------------------------------------------------------------------------------------


def test_staff_add_a_member_who_logs_in_with_a_role_and_locations(owner, locations):
    member = services.member_add(
        account=owner,
        email="Manager@Example.com",
        password=PASSWORD,
        role="manager",
        location_ids=[locations[1].pk],
    )
    assert (member.email, member.account, member.role) == ("manager@example.com", owner, "manager")
    assert list(member.locations.all()) == [locations[1]]
    assert authenticate(username="manager@example.com", password=PASSWORD) == member


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"role": "owner"}, "role"),
        ({"email": "taken@example.com"}, "email"),
        ({"password": "short"}, "password"),
        ({"location_ids": "elsewhere"}, "locations"),
    ],
)
def test_a_member_is_refused_whole(owner, locations, changes, field):
    UserFactory(email="taken@example.com")
    if changes.get("location_ids") == "elsewhere":
        changes["location_ids"] = [LocationFactory().pk]
    data = {"email": "new@example.com", "password": PASSWORD, "role": "viewer", **changes}
    with pytest.raises(ValidationError) as error:
        services.member_add(account=owner, **data)
    assert field in error.value.message_dict
    assert not User.objects.filter(email="new@example.com").exists()


def test_the_owner_changes_a_members_role_and_locations(owner, locations):
    member = UserFactory(account=owner, role=Role.VIEWER)
    services.member_update(
        account=owner, member_id=member.pk, role="manager", location_ids=[locations[2].pk]
    )
    member.refresh_from_db()
    assert member.role == "manager" and list(member.locations.all()) == [locations[2]]
    with pytest.raises(User.DoesNotExist):
        services.member_update(account=UserFactory(), member_id=member.pk, role="viewer")


def test_removing_a_member_ends_their_sessions_and_tokens_at_once(owner, locations):
    member = services.member_add(
        account=owner, email="m@example.com", password=PASSWORD, role="manager"
    )
    browser = Client()
    assert browser.login(username="m@example.com", password=PASSWORD)
    assert browser.get("/accounts/password_change/").status_code == 200
    access, _ = issue_tokens(member)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
    assert api.get("/api/zapier/me").status_code == 200  # and now in the token cache

    assert services.member_remove(account=owner, member_id=member.pk)

    page = browser.get("/accounts/password_change/")
    assert page.status_code == 302 and page["Location"].startswith("/accounts/login/")
    assert api.get("/api/zapier/me").status_code == 401
    assert not get_access_token_model().objects.filter(user_id=member.pk).exists()
    assert not services.member_remove(account=owner, member_id=member.pk)
    assert not services.member_remove(account=UserFactory(), member_id=owner.pk)


# --- invitations ----------------------------------------------------------------------------------


@pytest.fixture
def outbox(settings, tmp_path):
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
                name, args = self.pop(0)
                assert name == services.INVITATION_TASK
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


def invite(owner, django_capture_on_commit_callbacks, **data) -> Invitation:
    with django_capture_on_commit_callbacks(execute=True):
        return services.member_invite(account=owner, **data)


def token_of(message) -> str:
    link = re.search(
        r"https://reviews\.example\.com/accounts/invitation/(\S+)/", message.get_content()
    )
    assert link, message.get_content()
    return link.group(1)


def test_an_invitation_is_e_mailed_after_commit_and_its_link_makes_a_member(
    owner, locations, outbox, worker, django_capture_on_commit_callbacks
):
    invitation = invite(
        owner,
        django_capture_on_commit_callbacks,
        email="New@Example.com",
        role="viewer",
        location_ids=[locations[0].pk, locations[2].pk],
        invited_by=owner,
    )
    assert mails(outbox) == []  # the worker sends it
    worker.run()
    [message] = mails(outbox)
    assert message["To"] == "new@example.com"
    assert message["Subject"] == "Join Acme Plumbing on Review requests"
    assert "as a viewer of Downtown, Airport" in message.get_content()
    assert services.invitation_url(invitation).endswith(f"/{token_of(message)}/")

    member = services.invitation_accept(token=token_of(message), password=PASSWORD)

    assert (member.account, member.role, member.email) == (owner, "viewer", "new@example.com")
    assert set(member.locations.all()) == {locations[0], locations[2]}
    assert authenticate(username="new@example.com", password=PASSWORD) == member
    invitation.refresh_from_db()
    assert invitation.accepted_at is not None
    with pytest.raises(services.InvitationUnusable, match="already used") as used:
        services.invitation_accept(token=token_of(message), password=PASSWORD)
    assert used.value.code == "used"


def test_an_invitation_expires_after_seven_days(
    owner, outbox, worker, time_machine, django_capture_on_commit_callbacks
):
    time_machine.move_to(T0, tick=False)
    invitation = invite(
        owner, django_capture_on_commit_callbacks, email="n@example.com", role="manager"
    )
    token = services.invitation_url(invitation).rstrip("/").rsplit("/", 1)[1]
    time_machine.move_to(T0 + timedelta(days=7) - timedelta(seconds=1), tick=False)
    assert services.invitation_pending(token=token) == invitation
    time_machine.move_to(T0 + timedelta(days=7), tick=False)
    with pytest.raises(services.InvitationUnusable, match="expired") as expired:
        services.invitation_accept(token=token, password=PASSWORD)
    assert expired.value.code == "expired"
    assert not User.objects.filter(email="n@example.com").exists()
    worker.run()
    assert mails(outbox) == []  # nothing is sent for an expired invitation


def test_inviting_again_replaces_the_pending_invitation_and_its_link(
    owner, outbox, worker, django_capture_on_commit_callbacks
):
    first = invite(owner, django_capture_on_commit_callbacks, email="n@example.com", role="viewer")
    old_token = services.invitation_url(first).rstrip("/").rsplit("/", 1)[1]
    second = invite(
        owner, django_capture_on_commit_callbacks, email="n@example.com", role="manager"
    )
    assert list(Invitation.objects.filter(account=owner)) == [second]
    with pytest.raises(services.InvitationUnusable, match="withdrawn or replaced"):
        services.invitation_pending(token=old_token)
    worker.run()
    assert len(mails(outbox)) == 1  # the replaced one is not sent


def test_a_revoked_invitation_or_a_forged_link_does_not_work(
    owner, outbox, worker, django_capture_on_commit_callbacks
):
    invitation = invite(
        owner, django_capture_on_commit_callbacks, email="n@example.com", role="viewer"
    )
    token = services.invitation_url(invitation).rstrip("/").rsplit("/", 1)[1]
    assert not services.invitation_revoke(account=UserFactory(), invitation_id=invitation.pk)
    assert services.invitation_revoke(account=owner, invitation_id=invitation.pk)
    with pytest.raises(services.InvitationUnusable) as revoked:
        services.invitation_pending(token=token)
    assert revoked.value.code == "withdrawn"
    forged = invitation.pk.hex + ":" + "x" * 27
    with pytest.raises(services.InvitationUnusable) as bad:
        services.invitation_pending(token=forged)
    assert bad.value.code == "invalid"


def test_an_address_with_a_login_is_not_invited(owner, django_capture_on_commit_callbacks):
    UserFactory(email="taken@example.com")
    with pytest.raises(ValidationError) as error:
        invite(owner, django_capture_on_commit_callbacks, email="Taken@example.com", role="viewer")
    assert "email" in error.value.message_dict
    with pytest.raises(ValidationError) as error:
        invite(owner, django_capture_on_commit_callbacks, email="n@example.com", role="owner")
    assert "role" in error.value.message_dict
    assert not Invitation.objects.exists()


def test_accepting_refuses_a_weak_password_and_keeps_the_invitation(
    owner, django_capture_on_commit_callbacks
):
    invitation = invite(
        owner, django_capture_on_commit_callbacks, email="n@example.com", role="viewer"
    )
    token = services.invitation_url(invitation).rstrip("/").rsplit("/", 1)[1]
    with pytest.raises(ValidationError) as error:
        services.invitation_accept(token=token, password="n@example.com")
    assert "password" in error.value.message_dict
    assert services.invitation_pending(token=token) == invitation
