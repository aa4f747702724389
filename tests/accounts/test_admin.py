"""The logins' admin (accounts.admin): search by e-mail or business name, an add form that makes a
usable login, an account's locations and members inline saved through accounts.services (a
refusal shows the service's message and keeps nothing), a member's page, the list's filters."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth import authenticate

from accounts import services
from accounts.models import Location, Role, User
from tests.factories import (
    DEFAULT_PASSWORD,
    LocationFactory,
    ReviewRequestFactory,
    UserFactory,
    first_location,
)
from tests.support.admin_forms import change_page_data, inline_prefix

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


# --- An account's page: its locations and members, saved through accounts.services ------------


@pytest.fixture
def account():
    owner = UserFactory(email="owner@smile.example", business_name="Smile Dental")
    first_location(owner, name="North", time_zone="America/Chicago")
    return owner


def change_url(user) -> str:
    return f"/admin/accounts/user/{user.pk}/change/"


def page(client, user):
    response = client.get(change_url(user))
    assert response.status_code == 200
    return response, change_page_data(response)


def test_an_accounts_page_lists_its_locations_and_members(admin_client, account):
    south = LocationFactory(account=account, name="South")
    member = services.member_add(
        account=account,
        email="desk@smile.example",
        password=DEFAULT_PASSWORD,
        role=Role.MANAGER,
        location_ids=[south.pk],
    )
    response, _ = page(admin_client, account)
    html = response.content.decode()
    assert "North" in html and "South" in html and member.email in html
    locations = response.context["inline_admin_formsets"][0].formset
    assert [form.instance.name for form in locations.forms] == ["North", "South"]


def test_a_location_added_inline_goes_through_the_service(admin_client, account):
    response, data = page(admin_client, account)
    prefix = inline_prefix(response, "location")
    data[f"{prefix}-TOTAL_FORMS"] = str(int(data[f"{prefix}-TOTAL_FORMS"]) + 1)
    data[f"{prefix}-1-name"] = "  South   Side "
    data[f"{prefix}-1-time_zone"] = ""  # the service's default: the account's zone
    response = admin_client.post(change_url(account), data)
    assert response.status_code == 302, response.context["errors"] if response.context else ""
    added = Location.objects.get(account=account, name="South Side")
    assert added.time_zone == account.time_zone and added.position == 1
    assert LogEntry.objects.filter(object_id=str(account.pk)).exists()


def test_a_location_moved_first_inline_becomes_the_default_and_keeps_no_rows(admin_client, account):
    north = Location.objects.get(account=account)
    south = LocationFactory(account=account, name="South")
    unplaced = ReviewRequestFactory(contact__owner=account, location=None)  # North's
    response, data = page(admin_client, account)
    prefix = inline_prefix(response, "location")
    data[f"{prefix}-1-position"] = "0"
    response = admin_client.post(change_url(account), data)
    assert response.status_code == 302
    assert list(Location.objects.filter(account=account).order_by("position")) == [south, north]
    # location_move pinned the old default's rows before South became the default.
    unplaced.refresh_from_db()
    assert unplaced.location_id == north.pk


def test_an_inline_save_the_service_refuses_shows_its_message_and_changes_nothing(
    admin_client, account
):
    """Deleting every location: the first goes (the service allows it), the last is refused
    ("an account keeps at least one location"); the whole save is rolled back."""
    north = Location.objects.get(account=account)
    south = LocationFactory(account=account, name="South")
    response, data = page(admin_client, account)
    prefix = inline_prefix(response, "location")
    data[f"{prefix}-0-DELETE"] = "on"
    data[f"{prefix}-1-DELETE"] = "on"
    data["business_name"] = "Smile Dental Group"
    response = admin_client.post(change_url(account), data)
    assert response.status_code == 200
    assert "An account keeps at least one location." in response.content.decode()
    assert set(Location.objects.filter(account=account)) == {north, south}
    north.refresh_from_db()
    account.refresh_from_db()
    assert north.position == 0 and account.business_name == "Smile Dental"
    assert not LogEntry.objects.exists()
    # What staff typed is still on the page.
    assert "Smile Dental Group" in response.content.decode()


def test_a_member_added_inline_gets_a_login_with_the_locations_given(admin_client, account):
    south = LocationFactory(account=account, name="South")
    response, data = page(admin_client, account)
    prefix = inline_prefix(response, "user")
    data[f"{prefix}-TOTAL_FORMS"] = "1"
    data.update(
        {
            f"{prefix}-0-email": "Desk@Smile.example",
            f"{prefix}-0-role": Role.MANAGER,
            f"{prefix}-0-locations": [str(south.pk)],
            f"{prefix}-0-new_password": DEFAULT_PASSWORD,
        }
    )
    response = admin_client.post(change_url(account), data)
    assert response.status_code == 302
    member = User.objects.get(email="desk@smile.example")
    assert (member.account, member.role) == (account, Role.MANAGER)
    assert list(member.locations.all()) == [south]
    assert authenticate(username="desk@smile.example", password=DEFAULT_PASSWORD) == member


def test_a_member_whose_password_the_service_refuses_is_not_added(admin_client, account):
    response, data = page(admin_client, account)
    prefix = inline_prefix(response, "user")
    data[f"{prefix}-TOTAL_FORMS"] = "1"
    data.update(
        {
            f"{prefix}-0-email": "desk@smile.example",
            f"{prefix}-0-role": Role.VIEWER,
            f"{prefix}-0-new_password": "12345",
        }
    )
    response = admin_client.post(change_url(account), data)
    assert response.status_code == 200
    assert "This password is too short" in response.content.decode()
    assert not User.objects.filter(email="desk@smile.example").exists()


def test_members_are_changed_and_removed_inline(admin_client, account):
    north = Location.objects.get(account=account)
    south = LocationFactory(account=account, name="South")
    staying = services.member_add(
        account=account,
        email="stay@smile.example",
        password=DEFAULT_PASSWORD,
        role=Role.VIEWER,
        location_ids=[north.pk],
    )
    leaving = services.member_add(
        account=account,
        email="leave@smile.example",
        password=DEFAULT_PASSWORD,
        role=Role.VIEWER,
        location_ids=[north.pk],
    )
    response, data = page(admin_client, account)
    prefix = inline_prefix(response, "user")
    rows = {
        form.instance.email: n
        for n, form in enumerate(response.context["inline_admin_formsets"][1].formset.forms)
    }
    data[f"{prefix}-{rows['stay@smile.example']}-role"] = Role.MANAGER
    data[f"{prefix}-{rows['stay@smile.example']}-locations"] = [str(south.pk)]
    data[f"{prefix}-{rows['leave@smile.example']}-DELETE"] = "on"
    response = admin_client.post(change_url(account), data)
    assert response.status_code == 302
    staying.refresh_from_db()
    assert staying.role == Role.MANAGER and list(staying.locations.all()) == [south]
    assert not User.objects.filter(pk=leaving.pk).exists()


def test_a_members_locations_are_chosen_among_the_accounts_own(admin_client, account):
    elsewhere = first_location(UserFactory(), name="Elsewhere")
    response, _ = page(admin_client, account)
    members = response.context["inline_admin_formsets"][1].formset
    offered = list(members.empty_form.fields["locations"].queryset)
    assert offered == list(Location.objects.filter(account=account))
    assert elsewhere not in offered


def test_a_members_page_shows_their_account_role_and_locations(admin_client, account):
    north = Location.objects.get(account=account)
    member = services.member_add(
        account=account,
        email="desk@smile.example",
        password=DEFAULT_PASSWORD,
        role=Role.VIEWER,
        location_ids=[north.pk],
    )
    response = admin_client.get(change_url(member))
    html = response.content.decode()
    assert change_url(account) in html and "Smile Dental" in html
    assert "Viewer" in html and "North" in html
    assert response.context["inline_admin_formsets"] == []


def test_the_users_list_filters_by_account_and_role(admin_client, account):
    north = Location.objects.get(account=account)
    for email, role in (("m@smile.example", Role.MANAGER), ("v@smile.example", Role.VIEWER)):
        services.member_add(
            account=account,
            email=email,
            password=DEFAULT_PASSWORD,
            role=role,
            location_ids=[north.pk],
        )
    UserFactory(email="stranger@example.com")

    def listed(params) -> set[str]:
        response = admin_client.get("/admin/accounts/user/", params)
        return {user.email for user in response.context["cl"].result_list}

    team = {"owner@smile.example", "m@smile.example", "v@smile.example"}
    assert listed({"account": "Owner@Smile.example"}) == team
    assert listed({"account": str(account.pk)}) == team
    assert listed({"account": str(account.pk), "role__exact": Role.MANAGER}) == {"m@smile.example"}
    assert listed({"account": "nobody@example.com"}) == set()
