from __future__ import annotations

import pytest
from django.contrib.auth import authenticate
from django.core.exceptions import ValidationError
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


@pytest.mark.parametrize(
    ("field", "value"), [("time_zone", "Mars/Olympus"), ("default_region", "XX")]
)
def test_invalid_time_zone_or_region_is_refused(field, value):
    user = UserFactory.build(**{field: value})
    with pytest.raises(ValidationError) as excinfo:
        user.full_clean(exclude=["password"])
    assert field in excinfo.value.message_dict


def test_admin_finds_owners_by_email_and_business_name(admin_client):
    UserFactory(email="plumber@example.com", business_name="Acme Plumbing")
    UserFactory(email="baker@example.com", business_name="Crusty Bakes")
    by_name = admin_client.get("/admin/accounts/user/", {"q": "acme"})
    by_email = admin_client.get("/admin/accounts/user/", {"q": "baker@"})
    assert b"plumber@example.com" in by_name.content
    assert b"baker@example.com" not in by_name.content
    assert b"baker@example.com" in by_email.content


def test_admin_add_owner_form_creates_a_usable_login(admin_client):
    response = admin_client.post(
        "/admin/accounts/user/add/",
        {
            "email": "New@Example.com",
            "business_name": "New Shop",
            "time_zone": "Europe/London",
            "default_region": "GB",
            "usable_password": "true",
            "password1": DEFAULT_PASSWORD,
            "password2": DEFAULT_PASSWORD,
        },
    )
    assert response.status_code == 302, response.content[:2000]
    assert authenticate(username="new@example.com", password=DEFAULT_PASSWORD) is not None


def test_login_page_signs_an_owner_in(client):
    UserFactory(email="owner@example.com")
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    response = client.post(
        "/accounts/login/", {"username": "owner@example.com", "password": DEFAULT_PASSWORD}
    )
    assert response.status_code == 302
    assert client.get("/").context["user"].email == "owner@example.com"
