"""Staff admin: clients with a secret shown once, connections and tokens with nothing secret."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.hashers import check_password
from django.test import Client
from oauth2_provider.models import (
    get_access_token_model,
    get_application_model,
    get_grant_model,
    get_refresh_token_model,
)

from oauth_provider import services
from oauth_provider.models import Connection
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

Application = get_application_model()
AccessToken = get_access_token_model()
RefreshToken = get_refresh_token_model()


def test_creating_a_client_shows_its_secret_once_and_stores_only_a_hash(staff):
    response = staff.post(
        "/admin/oauth2_provider/application/add/",
        {
            "name": "Zapier",
            "client_type": "confidential",
            "redirect_uris": "https://zapier.com/dashboard/auth/oauth/return/App9CLIAPI/",
        },
    )
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    application = Application.objects.get()
    html = response.content.decode()
    assert application.client_id in html
    secret = re.search(r"<td><code>([^<]+)</code></td>\s*</tr>", html)[1]
    assert secret != application.client_secret
    assert check_password(secret, application.client_secret)
    assert application.authorization_grant_type == Application.GRANT_AUTHORIZATION_CODE
    assert application.skip_authorization is False

    change = staff.get(f"/admin/oauth2_provider/application/{application.pk}/change/").content
    listing = staff.get("/admin/oauth2_provider/application/").content
    for page in (change, listing):
        assert secret.encode() not in page
        assert application.client_secret.encode() not in page
    assert b"hashed" in change


def test_a_client_added_in_the_admin_is_made_by_the_commands_service(staff, monkeypatch):
    """``oauth_client_create``, as ``create_oauth_client`` uses it: the redirect URIs stored
    space-separated as the command stores them (the form took them one per line), the owner
    and client type staff chose kept."""
    created = []
    create = services.oauth_client_create

    def spy(**kwargs):
        created.append(kwargs["name"])
        return create(**kwargs)

    monkeypatch.setattr(services, "oauth_client_create", spy)
    owner = UserFactory(is_staff=True)
    response = staff.post(
        "/admin/oauth2_provider/application/add/",
        {
            "name": "Make",
            "client_type": "public",
            "redirect_uris": "https://make.example/cb\r\nhttps://make.example/cb2",
            "user": owner.pk,
        },
    )
    assert response.status_code == 200
    assert created == ["Make"]
    application = Application.objects.get()
    assert application.redirect_uris == "https://make.example/cb https://make.example/cb2"
    assert (application.client_type, application.user) == ("public", owner)
    assert application.client_id in response.content.decode()


def test_client_redirect_uris_must_be_https(staff):
    response = staff.post(
        "/admin/oauth2_provider/application/add/",
        {"name": "Bad", "client_type": "confidential", "redirect_uris": "http://example.com/cb"},
    )
    assert response.status_code == 200
    assert not Application.objects.exists()
    assert b"errorlist" in response.content


def test_rotating_a_secret_shows_the_new_one_once(staff, application):
    old_hash = application.client_secret
    response = staff.post(
        "/admin/oauth2_provider/application/",
        {"action": "rotate_secret", "_selected_action": [application.pk]},
    )
    assert response.status_code == 200
    application.refresh_from_db()
    secret = re.search(r"<td><code>([^<]+)</code></td>\s*</tr>", response.content.decode())[1]
    assert application.client_secret != old_hash
    assert check_password(secret, application.client_secret)


def test_staff_who_may_only_view_clients_cannot_rotate_a_secret(application):
    """An action without declared permissions is offered to anyone who sees the list: a
    viewer could break a connected platform and read the new secret."""
    from django.contrib.auth.models import Permission

    viewer = UserFactory(is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_application"))
    client = Client()
    client.force_login(viewer)
    old_hash = application.client_secret
    response = client.post(
        "/admin/oauth2_provider/application/",
        {"action": "rotate_secret", "_selected_action": [application.pk]},
    )
    application.refresh_from_db()
    assert application.client_secret == old_hash
    assert b"Client secrets rotated" not in response.content


def test_token_pages_never_show_token_values_or_codes(staff, flow):
    tokens = flow.connect()
    code = flow.code()  # an unused grant exists too
    pages = [
        staff.get("/admin/oauth_provider/connection/"),
        staff.get("/admin/oauth2_provider/accesstoken/"),
        staff.get("/admin/oauth2_provider/refreshtoken/"),
        staff.get(f"/admin/oauth2_provider/accesstoken/{AccessToken.objects.get().pk}/change/"),
        staff.get(f"/admin/oauth2_provider/refreshtoken/{RefreshToken.objects.get().pk}/change/"),
    ]
    checksums = [
        AccessToken.objects.get().token_checksum,
        RefreshToken.objects.get().token_checksum,
    ]
    for page in pages:
        assert page.status_code == 200
        html = page.content.decode()
        for secret in (tokens.access_token, tokens.refresh_token, code, *checksums):
            assert secret not in html
    assert staff.get("/admin/oauth2_provider/grant/").status_code == 404
    assert get_grant_model().objects.exists()


def test_connections_list_per_user_and_revoke_action(staff, flow):
    tokens = flow.connect()
    listing = staff.get("/admin/oauth_provider/connection/", {"q": flow.owner.email})
    assert flow.owner.email in listing.content.decode()
    response = staff.post(
        "/admin/oauth_provider/connection/",
        {"action": "revoke", "_selected_action": [Connection.objects.get().pk]},
        follow=True,
    )
    assert "Revoked 2 tokens." in response.content.decode()
    assert flow.api(tokens.access_token).get("/api/zapier/me").status_code == 401
    assert flow.refresh(tokens.refresh_token).json()["error"] == "invalid_grant"


@pytest.mark.parametrize("model", ["accesstoken", "refreshtoken"])
def test_token_revoke_actions_end_the_connection(staff, flow, model):
    tokens = flow.connect()
    token = (AccessToken if model == "accesstoken" else RefreshToken).objects.get()
    staff.post(
        f"/admin/oauth2_provider/{model}/",
        {"action": "revoke", "_selected_action": [token.pk]},
    )
    assert flow.api(tokens.access_token).get("/api/zapier/me").status_code == 401
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()


def test_staff_without_change_permission_cannot_revoke(flow):
    tokens = flow.connect()
    viewer = UserFactory(is_staff=True)
    from django.contrib.auth.models import Permission

    viewer.user_permissions.add(Permission.objects.get(codename="view_connection"))
    client = Client()
    client.force_login(viewer)
    assert client.get("/admin/oauth_provider/connection/").status_code == 200
    client.post(
        "/admin/oauth_provider/connection/",
        {"action": "revoke", "_selected_action": [Connection.objects.get().pk]},
    )
    assert flow.api(tokens.access_token).get("/api/zapier/me").status_code == 200
