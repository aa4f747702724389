"""The Locations page (portal.views.locations), the owner's only: the account's locations in
order (the first is the default), adding one, renaming it, its time zone, moving it, making it
the default, deleting it; what accounts.services refuses is said on the page."""

from __future__ import annotations

import pytest

from accounts.models import Location
from reviews.models import ReviewRequest
from tests.support.portal_data import add_request, query_count

pytestmark = pytest.mark.django_db

URL = "/portal/locations/"


def names(owner) -> list[str]:
    return list(
        Location.objects.filter(account=owner)
        .order_by("position", "created_at")
        .values_list("name", flat=True)
    )


def test_the_page_lists_the_locations_in_order_the_first_as_default(browser, owner, locations):
    html = browser.get(URL).content.decode()
    listed = html[html.index('data-testid="locations"') :]
    assert listed.index("Downtown") < listed.index("Uptown") < listed.index("Airport")
    assert listed.index("Default") < listed.index("Uptown")


def test_adding_a_location_puts_it_last_in_the_accounts_time_zone_unless_chosen(browser, owner):
    answer = browser.post(URL, {"name": "  Harbour   Front ", "time_zone": "Europe/London"})
    assert answer.status_code == 302
    added = Location.objects.get(account=owner, name="Harbour Front")
    assert added.time_zone == "Europe/London"
    assert names(owner)[-1] == "Harbour Front"
    form = browser.get(URL).context["form"]
    assert form["time_zone"].value() == owner.time_zone


def test_a_name_the_account_already_uses_is_refused_with_a_message(browser, owner, locations):
    page = browser.post(URL, {"name": "Uptown", "time_zone": "UTC"})
    assert page.status_code == 200
    assert "already exists" in page.content.decode()
    assert names(owner).count("Uptown") == 1


def test_renaming_and_changing_the_time_zone(browser, owner, locations):
    uptown = locations[1]
    assert browser.get(f"{URL}{uptown.pk}/").status_code == 200
    answer = browser.post(f"{URL}{uptown.pk}/", {"name": "Uptown Clinic", "time_zone": "UTC"})
    assert answer.status_code == 302
    uptown.refresh_from_db()
    assert (uptown.name, uptown.time_zone) == ("Uptown Clinic", "UTC")


def test_moving_a_location_and_making_one_the_default(browser, owner, locations):
    browser.post(f"{URL}{locations[2].pk}/move/", {"direction": "up"})
    assert names(owner) == ["Downtown", "Airport", "Uptown"]
    browser.post(f"{URL}{locations[0].pk}/move/", {"direction": "down"})
    assert names(owner) == ["Airport", "Downtown", "Uptown"]
    answer = browser.post(f"{URL}{locations[1].pk}/move/", {"direction": "default"}, follow=True)
    assert names(owner) == ["Uptown", "Airport", "Downtown"]
    assert "Uptown is the default location now" in answer.content.decode()


def test_making_another_location_the_default_keeps_the_old_defaults_requests_there(
    browser, owner, locations
):
    request = add_request(owner, first_name="Jane", email="jane@example.com")
    ReviewRequest.objects.filter(pk=request.pk).update(location=None)  # written before locations
    browser.post(f"{URL}{locations[2].pk}/move/", {"direction": "default"})
    request.refresh_from_db()
    assert request.location_id == locations[0].pk


def test_deleting_a_location(browser, owner, locations):
    assert browser.get(f"{URL}{locations[2].pk}/delete/").status_code == 200
    answer = browser.post(f"{URL}{locations[2].pk}/delete/", follow=True)
    assert "Deleted Airport." in answer.content.decode()
    assert names(owner) == ["Downtown", "Uptown"]


def test_what_the_services_refuse_is_said_and_nothing_is_deleted(browser, owner, locations):
    add_request(owner, first_name="Jane", email="jane@example.com", location=locations[1])
    answer = browser.post(f"{URL}{locations[1].pk}/delete/", follow=True)
    assert "Uptown was not deleted. This location has review requests" in (answer.content.decode())
    assert "Uptown" in names(owner)
    assert ReviewRequest.objects.filter(location=locations[1]).exists()


def test_the_only_location_cannot_be_deleted(browser, owner):
    only = Location.objects.get(account=owner)
    answer = browser.post(f"{URL}{only.pk}/delete/", follow=True)
    assert "An account keeps at least one location." in answer.content.decode()
    assert Location.objects.filter(pk=only.pk).exists()


def test_another_accounts_location_is_not_found(browser, other_owner):
    theirs = Location.objects.get(account=other_owner)
    assert browser.get(f"{URL}{theirs.pk}/").status_code == 404
    assert browser.post(f"{URL}{theirs.pk}/move/", {"direction": "up"}).status_code == 404
    assert browser.post(f"{URL}{theirs.pk}/delete/").status_code == 404
    assert Location.objects.filter(pk=theirs.pk).exists()


def test_members_get_a_403_on_the_locations_pages(owner, locations, manager, viewer):
    for client in (manager, viewer):
        assert client.get(URL).status_code == 403
        assert client.post(URL, {"name": "Mine", "time_zone": "UTC"}).status_code == 403
        assert client.post(f"{URL}{locations[1].pk}/delete/").status_code == 403
        assert client.post(f"{URL}{locations[1].pk}/move/", {"direction": "up"}).status_code == 403
    assert names(owner) == ["Downtown", "Uptown", "Airport"]


def test_the_page_costs_the_same_queries_with_more_locations(browser, owner, locations):
    few = query_count(browser, URL)
    for n in range(5):
        browser.post(URL, {"name": f"Extra {n}", "time_zone": "UTC"})
    assert query_count(browser, URL) == few
