"""The owner (accounts.models.User): an e-mail login in any case, unique whatever the case, the
business's defaults, and staff (createsuperuser) with no business name."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command
from django.db import IntegrityError

from accounts.models import User
from tests.factories import DEFAULT_PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


def test_user_has_uuid_id_email_login_and_business_defaults():
    user = User.objects.create_user(email="Jane@Example.COM", password=DEFAULT_PASSWORD)
    assert len(str(user.id)) == 36
    assert user.email == "jane@example.com"
    assert user.time_zone == "UTC"
    assert user.default_region == "US"
    assert User.USERNAME_FIELD == "email"


def test_login_by_email_is_case_insensitive():
    user = UserFactory(email="owner@example.com")
    assert authenticate(username="OWNER@example.com", password=DEFAULT_PASSWORD) == user


def test_database_refuses_two_owners_differing_only_in_case():
    UserFactory(email="owner@example.com")
    with pytest.raises(IntegrityError):
        User.objects.bulk_create([User(email="Owner@Example.com")])


PASSWORD = "a long enough passphrase"


def test_createsuperuser_asks_staff_for_no_business_name(monkeypatch):
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", PASSWORD)
    out = io.StringIO()
    call_command("createsuperuser", "--noinput", "--email", "staff@example.com", stdout=out)
    staff = User.objects.get(email="staff@example.com")
    assert staff.is_staff and staff.is_superuser and staff.business_name == ""
    assert staff.display_name == "staff@example.com"
