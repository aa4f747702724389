"""accounts.access: who reaches what in an account, and the reads that use it."""

from __future__ import annotations

import pytest

from accounts.access import access_for, can_manage_account, can_write, location_q, reaches
from accounts.models import Role
from reviews.models import BusinessSettings, ReviewRequest
from reviews.selectors import contacts_visible, review_requests_visible
from tests.factories import (
    ContactFactory,
    LocationFactory,
    ReviewRequestFactory,
    UserFactory,
    first_location,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def account():
    """An owner with three locations (Downtown, the default, first), and a manager of Uptown
    and Downtown, a viewer of Airport."""
    owner = UserFactory()
    downtown = first_location(owner, name="Downtown")
    uptown = LocationFactory(account=owner, name="Uptown")
    airport = LocationFactory(account=owner, name="Airport")
    manager = UserFactory(account=owner, role=Role.MANAGER)
    manager.locations.set([uptown, downtown])
    viewer = UserFactory(account=owner, role=Role.VIEWER)
    viewer.locations.set([airport])
    return owner, (downtown, uptown, airport), manager, viewer


def test_the_owner_reaches_every_location_of_the_account_and_the_account(account):
    owner, (downtown, uptown, airport), *_ = account
    access = access_for(owner)
    assert (access.owner, access.role, access.location_ids) == (owner, Role.OWNER, None)
    assert access.account_location_ids == (downtown.pk, uptown.pk, airport.pk)
    assert access.default_location_id == downtown.pk
    assert location_q(access).children == []
    assert all(reaches(access, loc.pk) for loc in (downtown, uptown, airport))
    assert reaches(access, None)  # the default location
    assert can_write(access) and can_manage_account(access)


def test_a_location_of_another_account_is_never_reached(account):
    owner, _, manager, _ = account
    elsewhere = LocationFactory()
    assert not reaches(access_for(owner), elsewhere.pk)
    assert not reaches(access_for(manager), elsewhere.pk)


def test_a_manager_reaches_their_locations_writes_and_manages_nothing_else(account):
    owner, (downtown, uptown, airport), manager, _ = account
    access = access_for(manager)
    assert (access.owner, access.role) == (owner, Role.MANAGER)
    assert access.location_ids == {downtown.pk, uptown.pk}
    assert reaches(access, uptown.pk) and reaches(access, None)  # the default is theirs
    assert not reaches(access, airport.pk)
    assert can_write(access) and not can_manage_account(access)


def test_a_viewer_reaches_their_locations_read_only(account):
    _, (downtown, _, airport), _, viewer = account
    access = access_for(viewer)
    assert access.location_ids == {airport.pk}
    assert reaches(access, airport.pk)
    assert not reaches(access, None) and not reaches(access, downtown.pk)
    assert not can_write(access) and not can_manage_account(access)


def test_a_member_without_locations_reaches_none(account):
    owner, *_ = account
    nobody = UserFactory(account=owner, role=Role.VIEWER)
    access = access_for(nobody)
    assert access.location_ids == frozenset()
    assert not reaches(access, None)
    assert not review_requests_visible(access=access).exists()


def test_requests_with_no_location_are_the_default_locations(account):
    owner, (_downtown, uptown, airport), manager, viewer = account
    unplaced = ReviewRequestFactory(contact=ContactFactory(owner=owner))  # location NULL
    at_uptown = ReviewRequestFactory(contact=ContactFactory(owner=owner), location=uptown)
    at_airport = ReviewRequestFactory(contact=ContactFactory(owner=owner), location=airport)
    ReviewRequestFactory()  # another account's

    def seen(user) -> set:
        return set(review_requests_visible(access=access_for(user)).values_list("pk", flat=True))

    assert seen(owner) == {unplaced.pk, at_uptown.pk, at_airport.pk}
    assert seen(manager) == {unplaced.pk, at_uptown.pk}
    assert seen(viewer) == {at_airport.pk}
    # The same rule through a relation, as a later caller spells it.
    contacts = ReviewRequest.objects.filter(location_q(access_for(viewer))).values("contact")
    assert list(contacts) == [{"contact": at_airport.contact_id}]


def test_a_member_sees_a_contact_that_has_a_request_at_one_of_their_locations(account):
    owner, (_downtown, uptown, airport), manager, viewer = account
    both = ContactFactory(owner=owner)
    ReviewRequestFactory(contact=both, location=uptown)
    ReviewRequestFactory(
        contact=both, location=airport, status="completed", ended_at=both.created_at
    )
    only_uptown = ContactFactory(owner=owner)
    ReviewRequestFactory(contact=only_uptown, location=uptown)
    no_request = ContactFactory(owner=owner)

    def seen(user) -> set:
        return set(contacts_visible(access=access_for(user)).values_list("pk", flat=True))

    assert seen(owner) == {both.pk, only_uptown.pk, no_request.pk}
    assert seen(manager) == {both.pk, only_uptown.pk}
    assert seen(viewer) == {both.pk}


def test_access_for_a_member_costs_two_queries_and_an_owner_one(account, django_assert_num_queries):
    owner, _, manager, _ = account
    manager = type(manager).objects.get(pk=manager.pk)
    with django_assert_num_queries(2):
        access_for(manager)
    with django_assert_num_queries(1):
        access_for(owner)


def test_a_member_is_never_read_as_an_account(account):
    _, _, manager, _ = account
    with pytest.raises(ValueError, match="is a member"):
        BusinessSettings.for_owner(manager)
    assert not BusinessSettings.objects.filter(owner=manager).exists()
