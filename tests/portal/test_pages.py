"""What every owner page shares (portal.pages): login, strict isolation between owners (no IDOR),
CSRF, headers, landmarks."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from reviews.models import Message, ReviewRequest, ReviewSite
from tests.factories import LocationFactory
from tests.support.oauth import issue_tokens
from tests.support.portal_data import add_request, member_client

pytestmark = pytest.mark.django_db

PAGES = [
    "/",
    "/portal/settings/",
    "/portal/settings/sites/",
    "/portal/settings/messages/",
    "/portal/settings/messages/sms/0/",
    "/portal/settings/messages/email/1/",
    "/portal/apps/",
]


@pytest.mark.parametrize(
    "path",
    [
        p
        for p in PAGES
        if p != "/"  # the front page shows the anonymous landing page instead
    ],
)
def test_portal_pages_send_anonymous_visitors_to_login(client, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={path}"


def test_front_page_is_a_landing_page_for_visitors_and_the_dashboard_for_owners(client, owner):
    landing = client.get("/")
    assert b'href="/accounts/login/"' in landing.content
    assert b"each counted on the day it happened" not in landing.content
    client.force_login(owner)
    dashboard = client.get("/")
    assert b"each counted on the day it happened" in dashboard.content
    assert "no-store" in dashboard["Cache-Control"]


@pytest.mark.parametrize("path", PAGES)
def test_portal_pages_are_not_cached_framed_or_open_to_other_origins(browser, path):
    response = browser.get(path)
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    assert response["X-Frame-Options"] == "DENY"
    csp = response["Content-Security-Policy"]
    assert "default-src 'none'" in csp
    assert "script-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp
    assert "form-action 'self'" in csp
    assert "unsafe-inline" not in csp.replace("style-src-attr 'unsafe-inline'", "")


@pytest.mark.parametrize(
    ("path", "current"),
    [
        ("/", "Dashboard"),
        ("/portal/settings/", "Settings"),
        ("/portal/settings/messages/sms/0/", "Settings"),
        ("/portal/apps/", "Connected apps"),
    ],
)
def test_pages_have_a_language_landmarks_and_mark_the_current_section(browser, path, current):
    html = browser.get(path).content.decode()
    assert '<html lang="en">' in html
    for landmark in ("<header", '<nav class="primary" aria-label="Main"', '<main id="main"'):
        assert landmark in html
    marked = re.findall(r'<a href="[^"]*" aria-current="page">([^<]+)</a>', html)
    assert current in marked


def test_every_form_control_has_a_label(browser):
    html = browser.get("/portal/settings/").content.decode()
    ids = re.findall(r'<(?:input|select|textarea)[^>]*\bid="([^"]+)"', html)
    assert len(ids) > 10
    for control_id in ids:
        assert f'for="{control_id}"' in html, control_id


def test_another_owners_request_is_not_found(browser, other_owner):
    theirs = add_request(other_owner, first_name="Private", email="private@example.com")
    assert browser.get(f"/portal/requests/{theirs.pk}/").status_code == 404
    assert browser.get(f"/portal/requests/{theirs.pk}/cancel/").status_code == 404
    assert browser.post(f"/portal/requests/{theirs.pk}/cancel/").status_code == 404
    theirs.refresh_from_db()
    assert theirs.status == ReviewRequest.Status.SCHEDULED
    assert Message.objects.get(review_request=theirs, step=0).status == Message.Status.PENDING


def test_another_owners_requests_never_appear_in_the_list_or_the_numbers(browser, other_owner):
    add_request(other_owner, first_name="Private", email="private@example.com")
    html = browser.get("/", {"q": "private", "period": "all"}).content.decode()
    assert "Private" not in html
    assert browser.get("/").context["funnel"].added == 0


def test_another_owners_connection_cannot_be_disconnected(browser, api_client, other_owner):
    access, _ = issue_tokens(other_owner)
    from oauth_provider.models import Connection

    connection = Connection.objects.get(user=other_owner)
    assert browser.get(f"/portal/apps/{connection.pk}/disconnect/").status_code == 404
    assert browser.post(f"/portal/apps/{connection.pk}/disconnect/").status_code == 404
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
    assert api_client.get("/api/zapier/me").status_code == 200


def test_another_owners_review_site_cannot_be_moved_or_removed(browser, other_owner):
    theirs = ReviewSite.objects.create(
        owner=other_owner, url="https://g.page/r/theirs/review", label="Google"
    )
    assert browser.post(f"/portal/settings/sites/{theirs.pk}/remove/").status_code == 404
    move = browser.post(f"/portal/settings/sites/{theirs.pk}/move/", {"direction": "up"})
    assert move.status_code == 404
    assert ReviewSite.objects.filter(pk=theirs.pk).exists()


@pytest.mark.parametrize(
    ("path", "data"),
    [
        ("/portal/settings/", {"business_name": "Hijacked"}),
        ("/portal/settings/sites/", {"url": "https://g.page/r/evil/review"}),
        ("/portal/settings/messages/sms/0/", {"action": "save", "body": "x {review_link}"}),
    ],
)
def test_forms_refuse_posts_without_the_csrf_token(owner, path, data):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)
    assert browser.post(path, data).status_code == 403
    owner.refresh_from_db()
    assert owner.business_name != "Hijacked"
    assert not ReviewSite.objects.filter(url__contains="evil").exists()


def test_state_changing_routes_accept_only_post(browser, owner):
    site = ReviewSite.objects.create(owner=owner, url="https://g.page/r/mine/review", label="G")
    assert browser.get(f"/portal/settings/sites/{site.pk}/remove/").status_code == 405
    assert browser.get(f"/portal/settings/sites/{site.pk}/move/").status_code == 405
    assert browser.get("/portal/settings/messages/sms/0/reset/").status_code == 405
    assert ReviewSite.objects.filter(pk=site.pk).exists()


# --- Members: the same pages, through accounts.access ---------------------------------------------

MEMBER_PAGES = [
    "/",
    "/portal/feedback/",
    "/portal/settings/sites/",
    "/portal/settings/messages/",
    "/portal/settings/messages/sms/0/",
    "/portal/settings/messages/email/1/",
    "/portal/apps/",
]
OWNER_ONLY_PAGES = [
    "/portal/settings/",
    "/portal/webhooks/",
    "/portal/team/",
    "/portal/locations/",
]


@pytest.fixture
def members(owner):
    uptown = LocationFactory(account=owner, name="Uptown")
    return [
        member_client(owner, role=role, locations=[uptown], email=f"{role}@example.com")
        for role in ("manager", "viewer")
    ]


@pytest.mark.parametrize("path", MEMBER_PAGES)
def test_every_page_opens_for_members(members, path):
    for client in members:
        response = client.get(path)
        assert response.status_code == 200, (client.user.role, path)
        assert "no-store" in response["Cache-Control"]
        assert "frame-ancestors 'none'" in response["Content-Security-Policy"]


@pytest.mark.parametrize("path", OWNER_ONLY_PAGES)
def test_the_accounts_own_pages_are_a_403_for_members_and_open_for_the_owner(
    members, browser, path
):
    for client in members:
        assert client.get(path).status_code == 403
    assert browser.get(path).status_code == 200


def test_a_member_sees_times_in_the_accounts_time_zone(members, owner):
    assert members[0].user.time_zone != owner.time_zone
    html = members[0].get("/").content.decode()
    assert f"Times are shown in {owner.time_zone}." in html
    assert owner.business_name in html


def test_a_members_navigation_leaves_out_the_owners_pages(members):
    html = members[0].get("/").content.decode()
    assert 'href="/portal/webhooks/"' not in html
    assert 'href="/portal/settings/"' not in html
    assert 'href="/portal/settings/sites/' in html  # their Settings
