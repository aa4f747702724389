"""The account's models: an owner is an account, a member belongs to one; locations; invitations."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from accounts.models import Invitation, Location, Role, User
from tests.factories import LocationFactory, UserFactory

pytestmark = pytest.mark.django_db


def _refused(create) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        create()


def test_a_user_is_an_owner_by_default_even_inserted_by_a_release_without_roles():
    """The column has a database default: the previous release's INSERT (no role) still works
    during a deploy, and makes an owner."""
    assert UserFactory().role == Role.OWNER
    pk = User._meta.pk.get_db_prep_value(uuid.uuid4(), connection)
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO accounts_user (id, password, is_superuser, email, business_name, "
            "time_zone, default_region, is_staff, is_active, date_joined) "
            "VALUES (%s, '!', false, 'old@example.com', 'Old', 'UTC', 'US', false, true, %s)",
            [pk, timezone.now()],
        )
    old = User.objects.get(email="old@example.com")
    assert (old.role, old.account_id, old.is_member) == (Role.OWNER, None, False)


def test_the_database_refuses_an_owner_in_an_account_and_a_member_without_one():
    owner = UserFactory()
    _refused(lambda: UserFactory(account=owner, role=Role.OWNER))
    _refused(lambda: UserFactory(role=Role.MANAGER))
    member = UserFactory(account=owner, role=Role.VIEWER)
    assert member.is_member and member.account_id_or_own == owner.pk
    assert owner.account_id_or_own == owner.pk


def test_a_members_user_goes_with_its_account():
    owner = UserFactory()
    member = UserFactory(account=owner, role=Role.MANAGER)
    owner.delete()
    assert not User.objects.filter(pk=member.pk).exists()


def test_a_new_owner_has_its_first_location_and_staff_and_members_none():
    owner = UserFactory(business_name="Acme", time_zone="Europe/Rome")
    [first] = Location.objects.filter(account=owner)
    assert (first.name, first.time_zone, first.position) == ("Acme", "Europe/Rome", 0)
    assert not Location.objects.filter(account=UserFactory(is_staff=True)).exists()
    member = UserFactory(account=owner, role=Role.VIEWER)
    assert not Location.objects.filter(account=member).exists()


def test_location_names_are_unique_within_an_account_only():
    owner, other = UserFactory(), UserFactory()
    LocationFactory(account=owner, name="Downtown")
    LocationFactory(account=other, name="Downtown")
    with pytest.raises(ValidationError, match="already exists"):
        Location(account=owner, name="Downtown", time_zone="UTC").full_clean()


def test_a_location_needs_an_iana_time_zone_and_its_name_is_tidied():
    location = Location(account=UserFactory(), name="  Down   town ", time_zone="Mars/Olympus")
    with pytest.raises(ValidationError) as error:
        location.full_clean()
    assert "time_zone" in error.value.message_dict
    assert location.name == "Down town"


def test_the_first_location_is_named_after_the_business_or_its_login():
    assert Location.default_name(UserFactory(business_name=" Acme ")) == "Acme"
    assert Location.default_name(UserFactory(business_name="", email="x@example.com")) == (
        "x@example.com"
    )


def test_an_invitation_expires_seven_days_after_it_was_made():
    invitation = Invitation.objects.create(
        account=UserFactory(), email="new@example.com", role=Role.MANAGER
    )
    made = invitation.created_at
    assert invitation.expires_at == made + timedelta(days=7)
    assert not invitation.expired(now=made + timedelta(days=7) - timedelta(seconds=1))
    assert invitation.expired(now=made + timedelta(days=7))


def test_one_invitation_per_address_and_account():
    owner = UserFactory()
    Invitation.objects.create(account=owner, email="new@example.com", role=Role.MANAGER)
    _refused(
        lambda: Invitation.objects.create(account=owner, email="new@example.com", role="viewer")
    )
