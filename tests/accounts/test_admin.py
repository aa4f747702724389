"""The owners' admin: search by e-mail or business name, and an add form that makes a usable
login."""

from __future__ import annotations

import pytest
from django.contrib.auth import authenticate

from tests.factories import DEFAULT_PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


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
