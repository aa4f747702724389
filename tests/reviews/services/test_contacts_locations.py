"""contact_add at a location: contacts one per account, requests one per contact and location."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from reviews.models import BusinessSettings, Contact, Message, ReviewRequest
from reviews.services import ContactAddOutcome, contact_add
from tests.factories import (
    ContactFactory,
    LocationFactory,
    ReviewRequestFactory,
    ReviewSiteFactory,
    UserFactory,
    first_location,
)
from tests.support.contacts import contact_input

pytestmark = pytest.mark.django_db

NOON_IN_NEW_YORK = datetime(2026, 6, 10, 16, 0, tzinfo=UTC)
JANE = {"first_name": "Jane", "email": "jane@example.com", "mobile_phone_number": "+14155552671"}


@pytest.fixture
def now(time_machine):
    time_machine.move_to(NOON_IN_NEW_YORK, tick=False)
    return NOON_IN_NEW_YORK


@pytest.fixture
def account():
    """A business with two locations, each listing a review site: Downtown (the default) and
    Uptown."""
    owner = UserFactory(business_name="Acme", time_zone="America/New_York")
    downtown = first_location(owner, name="Downtown")
    uptown = LocationFactory(account=owner, name="Uptown")
    for location in (downtown, uptown):
        ReviewSiteFactory(owner=owner, location=location)
    return owner, downtown, uptown


def add(owner, location=None, **data):
    data = data or JANE
    return contact_add(
        owner=owner,
        data=contact_input(owner, data),
        location_id=location.pk if location is not None else None,
    )


def test_a_new_request_records_its_location_the_default_when_none_is_given(account, now):
    owner, downtown, uptown = account
    assert add(owner).review_request.location_id == downtown.pk
    other = add(owner, uptown, first_name="Bob", email="bob@example.com")
    assert other.review_request.location_id == uptown.pk
    stored = ReviewRequest.objects.get(pk=other.review_request.pk)
    assert stored.location_id == uptown.pk


def test_the_same_person_at_another_location_gets_that_locations_own_request(account, now):
    """Each listing is its own review: one contact, one request per location."""
    owner, downtown, uptown = account
    first = add(owner, downtown)
    second = add(owner, uptown)
    assert (first.created, second.created) == (True, True)
    assert second.contact.pk == first.contact.pk and not second.contact_created
    assert second.review_request.pk != first.review_request.pk
    assert Contact.objects.filter(owner=owner).count() == 1
    again = add(owner, uptown)
    assert (again.created, again.outcome) == (False, ContactAddOutcome.ALREADY_ACTIVE)
    assert again.review_request.pk == second.review_request.pk


def test_the_contact_is_matched_across_locations_by_phone_too(account, now):
    owner, downtown, uptown = account
    add(owner, downtown, first_name="Jane", mobile_phone_number="+14155552671")
    at_uptown = add(owner, uptown, first_name="Jane", mobile_phone_number="(415) 555-2671")
    assert not at_uptown.contact_created and at_uptown.created
    assert Contact.objects.filter(owner=owner).count() == 1


def test_a_request_with_no_location_is_the_default_locations(account, now):
    """Written before locations (or by the previous release): it blocks a new request at the
    default location, not at another."""
    owner, downtown, uptown = account
    contact = ContactFactory(owner=owner, email="jane@example.com", phone="+14155552671")
    old = ReviewRequestFactory(contact=contact)  # location NULL
    at_default = add(owner, downtown)
    assert (at_default.created, at_default.review_request.pk) == (False, old.pk)
    assert add(owner).review_request.pk == old.pk  # no location given: the default
    assert add(owner, uptown).created


def test_the_cooldown_is_per_location(account, time_machine):
    owner, downtown, uptown = account
    time_machine.move_to(NOON_IN_NEW_YORK, tick=False)
    first = add(owner, downtown).review_request
    ReviewRequest.objects.filter(pk=first.pk).update(
        status="completed", sent_at=NOON_IN_NEW_YORK, ended_at=NOON_IN_NEW_YORK
    )
    time_machine.move_to(NOON_IN_NEW_YORK + timedelta(days=1), tick=False)
    cooling = add(owner, downtown)
    assert (cooling.outcome, cooling.review_request.pk) == (ContactAddOutcome.COOLDOWN, first.pk)
    assert add(owner, uptown).created


def test_an_opted_out_contact_gets_one_record_per_location(account, now):
    owner, downtown, uptown = account
    contact = ContactFactory(owner=owner, email="jane@example.com")
    contact.save(update_fields=contact.opt_out("email", source="staff", at=now))
    data = {"first_name": "Jane", "email": "jane@example.com"}
    at_downtown = add(owner, downtown, **data)
    at_uptown = add(owner, uptown, **data)
    assert at_downtown.outcome == at_uptown.outcome == ContactAddOutcome.OPTED_OUT
    assert at_downtown.created and at_uptown.created
    assert at_uptown.review_request.location_id == uptown.pk
    assert add(owner, uptown, **data).review_request.pk == at_uptown.review_request.pk


def test_a_location_of_another_account_is_refused(account, now):
    owner, *_ = account
    with pytest.raises(ValidationError) as error:
        add(owner, LocationFactory())
    assert "location_id" in error.value.message_dict
    assert not Contact.objects.filter(owner=owner).exists()


def test_a_request_waits_for_a_site_of_its_own_location(account, now):
    owner, _, uptown = account
    bare = LocationFactory(account=owner, name="Airport")
    waiting = add(owner, bare).review_request
    step0 = waiting.messages.get(step=0)
    assert (step0.status, step0.last_error_code) == ("planned", Message.WAITING_FOR_REVIEW_SITE)
    going = add(owner, uptown, first_name="Bob", email="bob@example.com").review_request
    assert going.messages.get(step=0).status == "pending"


def test_the_database_allows_one_active_request_per_contact_and_location(account):
    owner, downtown, uptown = account
    contact = ContactFactory(owner=owner)
    ReviewRequestFactory(contact=contact, location=downtown)
    ReviewRequestFactory(contact=contact, location=uptown)
    with pytest.raises(IntegrityError), transaction.atomic():
        ReviewRequestFactory(contact=contact, location=uptown)
    unplaced = ContactFactory(owner=owner)
    ReviewRequestFactory(contact=unplaced)  # no location: one such request per contact too
    with pytest.raises(IntegrityError), transaction.atomic():
        ReviewRequestFactory(contact=unplaced)


def test_a_location_costs_the_write_path_no_statement(account, now):
    """The location comes with the cached settings: adding a contact at a location runs the
    statements it runs at the default."""
    owner, downtown, uptown = account
    BusinessSettings.for_owner(owner)
    add(owner, downtown, first_name="Warm", email="warm@example.com")  # the session's prepares

    def statements(location, email) -> list[str]:
        with CaptureQueriesContext(connection) as queries:
            assert add(owner, location, first_name="X", email=email).created
        return [q["sql"].split(" ", 1)[0] for q in queries.captured_queries]

    assert statements(None, "a@example.com") == statements(uptown, "b@example.com")
    assert len(statements(downtown, "c@example.com")) == len(statements(None, "d@example.com"))
