"""The consent page with teams and locations: it says which locations the app will reach, and a
member approves it for themselves (their token then acts for the account at their locations)."""

from __future__ import annotations

import pytest

from accounts.models import Role
from tests.factories import LocationFactory, UserFactory, first_location
from tests.oauth_provider.conftest import OAuthFlow

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(owner):
    downtown = first_location(owner, name="Downtown")
    uptown = LocationFactory(account=owner, name="Uptown")
    airport = LocationFactory(account=owner, name="Airport")
    manager = UserFactory(account=owner, role=Role.MANAGER, email="manager@example.com")
    manager.locations.set([uptown])
    return owner, (downtown, uptown, airport), manager


def test_the_owners_consent_page_lists_every_location(team, application):
    owner, locations, _ = team
    html = OAuthFlow(owner, application).consent_page(scope="read write").content.decode()
    assert "At every location of the account" in html
    for location in locations:
        assert f"<li>{location.name}</li>" in html


def test_a_member_approves_for_themselves_and_their_token_reaches_their_locations(
    team, application
):
    owner, (_, uptown, _), manager = team
    flow = OAuthFlow(manager, application)
    page = flow.consent_page(scope="read write")
    assert page.status_code == 200
    html = page.content.decode()
    assert "At your locations only" in html and "<li>Uptown</li>" in html
    assert "<li>Downtown</li>" not in html and "<li>Airport</li>" not in html
    assert owner.business_name in html
    tokens = flow.connect(scope="read write")
    api = flow.api(tokens.access_token)
    me = api.get("/api/zapier/me").json()
    assert (me["id"], me["role"]) == (str(manager.pk), "manager")
    listed = api.get("/api/zapier/locations").json()["results"]
    assert [loc["id"] for loc in listed] == [str(uptown.pk)]


def test_a_viewer_is_told_the_app_will_only_read(team, application):
    owner, (_, uptown, _), _ = team
    viewer = UserFactory(account=owner, role=Role.VIEWER)
    viewer.locations.set([uptown])
    html = OAuthFlow(viewer, application).consent_page(scope="read write").content.decode()
    assert "Your role is viewer" in html
