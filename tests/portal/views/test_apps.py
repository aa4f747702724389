"""Connected apps: what each authorised client may do and since when; disconnect revokes it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_refresh_token_model

from oauth_provider.models import Connection
from oauth_provider.services import connection_revoke
from tests.support.oauth import issue_tokens, make_application
from tests.support.portal_data import member_client, query_count
from tests.support.portal_golden import assert_page_unchanged

pytestmark = pytest.mark.django_db

URL = "/portal/apps/"


def test_each_live_connection_is_listed_with_scopes_and_times(browser, owner, other_owner):
    issue_tokens(owner, scope="read", application=make_application(name="Zapier"))
    used = timezone.now() - timedelta(hours=2)
    Connection.objects.filter(user=owner).update(last_used_at=used)
    issue_tokens(other_owner, application=make_application(name="Someone else's app"))
    response = browser.get(URL)
    [app] = response.context["apps"]
    assert app.name == "Zapier"
    assert app.scopes == [
        ("read", "See your business profile and the status of your review requests")
    ]
    html = response.content.decode()
    assert "See your business profile" in html
    assert "Add contacts" not in html  # the token was granted read only
    assert "2\xa0hours ago" in html  # timesince joins with a no-break space
    assert "Someone else" not in html


def test_revoked_connections_are_not_listed(browser, owner):
    issue_tokens(owner)
    connection_revoke(connection_id=Connection.objects.get(user=owner).pk)
    response = browser.get(URL)
    assert response.context["apps"] == []
    assert b"No app is connected to your account." in response.content


def test_disconnect_asks_first_then_revokes_every_token_of_the_connection(
    browser, owner, api_client
):
    access, _ = issue_tokens(owner)
    other_access, _ = issue_tokens(owner, application=make_application(name="Make"))
    connection = Connection.objects.get(user=owner, application__name="Zapier")
    url = f"{URL}{connection.pk}/disconnect/"
    assert b"Disconnect Zapier?" in browser.get(url).content
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
    assert api_client.get("/api/zapier/me").status_code == 200  # asking changes nothing

    response = browser.post(url, follow=True)
    assert response.redirect_chain == [(URL, 302)]
    assert b"Disconnected Zapier" in response.content
    assert [app.name for app in response.context["apps"]] == ["Make"]
    assert api_client.get("/api/zapier/me").status_code == 401
    assert not get_access_token_model().objects.filter(user=owner, application__name="Zapier")
    assert not get_refresh_token_model().objects.filter(
        token_family=connection.pk, revoked__isnull=True
    )
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {other_access}")
    assert api_client.get("/api/zapier/me").status_code == 200  # the other app still works

    again = browser.post(url, follow=True)
    assert b"Zapier was already disconnected." in again.content


def test_several_connections_to_one_app_are_one_entry_with_a_count(browser, owner):
    zapier = make_application(name="Zapier")
    for _ in range(5):
        issue_tokens(owner, scope="read", application=zapier)
    issue_tokens(owner, scope="read write", application=zapier)
    newest = Connection.objects.filter(user=owner).order_by("-created_at")
    used = timezone.now() - timedelta(hours=3)
    Connection.objects.filter(pk=newest[2].pk).update(last_used_at=used)
    response = browser.get(URL)
    [app] = response.context["apps"]
    assert (app.name, app.count, app.last_used_at) == ("Zapier", 6, used)
    assert [name for name, _ in app.scopes] == ["read", "write"]
    html = response.content.decode()
    assert html.count('<h2 id="app-') == 1
    assert "6 connections" in html
    assert "3\xa0hours ago" in html
    assert html.count('aria-label="Disconnect Zapier (connected') == 6  # each still separable


def test_a_business_with_one_location_sees_the_page_it_saw_before(golden):
    client, _, _ = golden
    assert_page_unchanged(client, "apps", "/portal/apps/")


# --- Members --------------------------------------------------------------------------------------


def test_the_owner_sees_everybodys_connections_with_who_connected_each(
    browser, owner, manager, other_owner
):
    issue_tokens(owner, application=make_application(name="Zapier"))
    issue_tokens(manager.user, application=make_application(name="Make"))
    issue_tokens(other_owner, application=make_application(name="Someone else's app"))
    response = browser.get(URL)
    assert sorted(app.name for app in response.context["apps"]) == ["Make", "Zapier"]
    html = response.content.decode()
    assert "<dt>Connected by</dt><dd>manager@example.com" in html
    assert html.count("Connected by") == 1  # the owner's own say nothing


def test_a_member_sees_and_disconnects_only_their_own_connections(owner, manager, viewer):
    issue_tokens(owner, application=make_application(name="Zapier"))
    issue_tokens(manager.user, application=make_application(name="Make"))
    issue_tokens(viewer.user, application=make_application(name="Sheets"))
    assert [app.name for app in manager.get(URL).context["apps"]] == ["Make"]
    owners = Connection.objects.get(user=owner)
    assert manager.get(f"/portal/apps/{owners.pk}/disconnect/").status_code == 404
    assert manager.post(f"/portal/apps/{owners.pk}/disconnect/").status_code == 404
    theirs = Connection.objects.get(user=viewer.user)
    assert manager.post(f"/portal/apps/{theirs.pk}/disconnect/").status_code == 404
    assert viewer.post(f"/portal/apps/{theirs.pk}/disconnect/").status_code == 302  # their own
    assert not Connection.objects.with_active().get(pk=theirs.pk).active
    assert Connection.objects.with_active().get(pk=owners.pk).active


def test_the_owner_disconnects_a_members_app(browser, manager):
    issue_tokens(manager.user, application=make_application(name="Make"))
    theirs = Connection.objects.get(user=manager.user)
    assert browser.post(f"/portal/apps/{theirs.pk}/disconnect/").status_code == 302
    assert not Connection.objects.with_active().get(pk=theirs.pk).active


def test_the_apps_page_costs_the_same_queries_with_more_members(browser, owner, locations):
    issue_tokens(owner, application=make_application(name="Zapier"))
    few = query_count(browser, URL)
    for n in range(4):
        member = member_client(owner, role="viewer", locations=locations, email=f"v{n}@example.com")
        issue_tokens(member.user, application=make_application(name=f"App {n}"))
    assert query_count(browser, URL) == few
