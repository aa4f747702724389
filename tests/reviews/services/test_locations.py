"""Moving a location's review requests to another location (reviews.services.locations): every
request goes, in batches; an active request whose contact already has an active request at the
target stays and is counted; the default location's rows with no location go too; held messages
are released where the target lists a site."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from accounts.models import Location
from reviews.models import Message, ReviewRequest
from reviews.services import contact_add, location_requests_move
from reviews.services.locations import MOVE_BATCH_SIZE
from tests.factories import LocationFactory, ReviewSiteFactory, UserFactory, first_location
from tests.support.contacts import contact_input

pytestmark = pytest.mark.django_db


@pytest.fixture
def account():
    owner = UserFactory(business_name="Smile Dental")
    ReviewSiteFactory(owner=owner)  # at the default location (no location)
    return owner


@pytest.fixture
def north(account):
    return first_location(account, name="North")


@pytest.fixture
def south(account):
    location = LocationFactory(account=account, name="South")
    ReviewSiteFactory(owner=account, location=location)
    return location


def add(owner, location: Location, **contact) -> ReviewRequest:
    data = contact_input(owner, {"delay_hours": 2, **contact})
    return contact_add(owner=owner, data=data, location_id=location.pk).review_request


def end(request: ReviewRequest) -> None:
    request.status, request.ended_at = ReviewRequest.Status.CANCELLED, timezone.now()
    request.ended_reason = ReviewRequest.EndedReason.CANCELLED
    request.save()


def at(location: Location) -> set:
    return set(ReviewRequest.objects.filter(location=location).values_list("pk", flat=True))


def test_location_requests_move_moves_every_request_and_counts_them(account, north, south):
    moving = [add(account, north, email=f"p{n}@example.com") for n in range(3)]
    end(moving[0])
    done = location_requests_move(owner=account, from_location_id=north.pk, to_location_id=south.pk)
    assert (done.moved, done.left) == (3, 0)
    assert at(south) == {r.pk for r in moving} and not at(north)


def test_location_requests_move_leaves_a_request_whose_contact_is_active_at_the_target(
    account, north, south
):
    both = add(account, north, email="both@example.com")
    there = add(account, south, email="both@example.com")
    alone = add(account, north, email="alone@example.com")
    assert both.contact_id == there.contact_id
    done = location_requests_move(owner=account, from_location_id=north.pk, to_location_id=south.pk)
    assert (done.moved, done.left) == (1, 1)
    assert at(north) == {both.pk}
    assert at(south) == {there.pk, alone.pk}
    # Never two active requests of one contact at one location.
    active = ReviewRequest.objects.filter(
        contact=both.contact, status__in=ReviewRequest.ACTIVE_STATUSES, location=south
    )
    assert active.count() == 1


def test_location_requests_move_moves_an_ended_request_of_a_contact_active_there(
    account, north, south
):
    ended = add(account, north, email="both@example.com")
    end(ended)
    add(account, south, email="both@example.com")
    done = location_requests_move(owner=account, from_location_id=north.pk, to_location_id=south.pk)
    assert (done.moved, done.left) == (1, 0)
    assert ended.pk in at(south)


def test_location_requests_move_crosses_batch_boundaries(account, north, south):
    """Five requests two at a time, created in the same second (the batches' order is
    created_at, then id), one held back in the middle batch: each is read once."""
    requests = [add(account, north, email=f"p{n}@example.com") for n in range(5)]
    same = timezone.now() - timedelta(hours=1)
    ReviewRequest.objects.filter(pk__in=[r.pk for r in requests]).update(created_at=same)
    middle = sorted(requests, key=lambda r: r.pk, reverse=True)[2]
    add(account, south, email=middle.contact.email)
    done = location_requests_move(
        owner=account, from_location_id=north.pk, to_location_id=south.pk, batch_size=2
    )
    assert (done.moved, done.left) == (4, 1)
    assert at(north) == {middle.pk}
    assert MOVE_BATCH_SIZE >= 100  # the default: a few hundred rows a transaction


def test_location_requests_move_takes_the_default_locations_rows_with_no_location(
    account, north, south
):
    pinned = add(account, north, email="pinned@example.com")
    unplaced = add(account, north, email="old@example.com")
    ReviewRequest.objects.filter(pk=unplaced.pk).update(location=None)
    other = UserFactory()
    elsewhere = add(other, first_location(other), email="old@example.com")
    ReviewRequest.objects.filter(pk=elsewhere.pk).update(location=None)
    done = location_requests_move(owner=account, from_location_id=north.pk, to_location_id=south.pk)
    assert (done.moved, done.left) == (2, 0)
    assert at(south) == {pinned.pk, unplaced.pk}
    # Another account's rows with no location are not this account's default location's.
    assert ReviewRequest.objects.get(pk=elsewhere.pk).location_id is None


def test_location_requests_move_to_the_default_location(account, north, south):
    moving = add(account, south, email="p@example.com")
    add(account, north, email="p@example.com")
    alone = add(account, south, email="q@example.com")
    done = location_requests_move(owner=account, from_location_id=south.pk, to_location_id=north.pk)
    assert (done.moved, done.left) == (1, 1)
    assert at(south) == {moving.pk}
    assert alone.pk in at(north)


def test_location_requests_move_marks_moved_requests_changed(account, north, south):
    request = add(account, north, email="p@example.com")
    before = timezone.now() - timedelta(days=1)
    ReviewRequest.objects.filter(pk=request.pk).update(updated_at=before)
    location_requests_move(owner=account, from_location_id=north.pk, to_location_id=south.pk)
    request.refresh_from_db()
    assert request.updated_at > before


def test_location_requests_move_releases_held_messages_where_the_target_lists_a_site(account):
    siteless = LocationFactory(account=account, name="New clinic")
    with_site = LocationFactory(account=account, name="Old clinic")
    ReviewSiteFactory(owner=account, location=with_site)
    held = add(account, siteless, email="p@example.com")
    assert held.messages.get(step=0).waiting_for_review_site
    location_requests_move(owner=account, from_location_id=siteless.pk, to_location_id=with_site.pk)
    first = held.messages.get(step=0)
    assert first.status == Message.Status.PENDING and not first.waiting_for_review_site


def test_location_requests_move_refuses_the_same_location_and_another_accounts(
    account, north, south
):
    request = add(account, north, email="p@example.com")
    with pytest.raises(ValidationError):
        location_requests_move(owner=account, from_location_id=north.pk, to_location_id=north.pk)
    foreign = first_location(UserFactory())
    with pytest.raises(Location.DoesNotExist):
        location_requests_move(owner=account, from_location_id=north.pk, to_location_id=foreign.pk)
    assert at(north) == {request.pk}
