"""Reads of requests (reviews.selectors.requests): the ending of a request reads as one
sentence; what moving a location's requests would do is counted as the move does it."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from accounts.models import Location
from reviews.models import Channel, Contact, ReviewRequest
from reviews.selectors import location_requests_move_preview, review_request_timeline
from reviews.services import contact_add, contacts_opt_out, location_requests_move
from tests.factories import LocationFactory, UserFactory, first_location
from tests.support.contacts import contact_input

pytestmark = pytest.mark.django_db


def test_the_ending_of_an_opted_out_request_reads_as_one_sentence(owner):
    request = contact_add(
        owner=owner, data=contact_input(owner, {"email": "jane@example.com"})
    ).review_request
    contacts_opt_out(
        contacts=[request.contact],
        channel=Channel.EMAIL,
        source=Contact.OptOutSource.EMAIL_UNSUBSCRIBE,
    )
    request.refresh_from_db()
    (ended,) = [e for e in review_request_timeline(review_request=request) if e.kind == "ended"]
    assert ended.detail == "The contact opted out of every channel we can reach them on."


def test_an_ending_with_its_own_detail_keeps_both(owner):
    request = contact_add(
        owner=owner, data=contact_input(owner, {"email": "jane@example.com"})
    ).review_request
    now = timezone.now()
    ReviewRequest.objects.filter(pk=request.pk).update(
        status="cancelled",
        ended_at=now,
        cancelled_at=now,
        ended_reason="cancelled",
        ended_detail="cancelled by the business in the portal",
    )
    request.refresh_from_db()
    (ended,) = [e for e in review_request_timeline(review_request=request) if e.kind == "ended"]
    assert ended.detail == (
        "Cancelled by staff or the business. cancelled by the business in the portal"
    )


# --- What moving a location's requests would do (location_requests_move_preview) -------------


def _add_at(owner, location, email):
    data = contact_input(owner, {"email": email, "delay_hours": 2})
    return contact_add(owner=owner, data=data, location_id=location.pk).review_request


def test_the_move_preview_counts_what_the_move_does(owner):
    north = first_location(owner, name="North")
    south = LocationFactory(account=owner, name="South")
    _add_at(owner, north, "both@example.com")
    _add_at(owner, south, "both@example.com")
    _add_at(owner, north, "alone@example.com")
    ids = {"owner": owner, "from_location_id": north.pk, "to_location_id": south.pk}
    preview = location_requests_move_preview(**ids)
    assert ReviewRequest.objects.filter(location=north).count() == 2  # nothing moved
    done = location_requests_move(**ids)
    assert (preview.moved, preview.left) == (done.moved, done.left) == (1, 1)


def test_the_move_preview_refuses_what_the_move_refuses(owner):
    north = first_location(owner)
    foreign = first_location(UserFactory())
    with pytest.raises(Location.DoesNotExist):
        location_requests_move_preview(
            owner=owner, from_location_id=foreign.pk, to_location_id=north.pk
        )
    with pytest.raises(ValidationError):
        location_requests_move_preview(
            owner=owner, from_location_id=north.pk, to_location_id=north.pk
        )
