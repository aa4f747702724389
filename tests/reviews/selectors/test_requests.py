"""A request's timeline (reviews.selectors.requests): the ending of a request reads as one
sentence."""

from __future__ import annotations

import pytest
from django.utils import timezone

from reviews.models import Channel, Contact, ReviewRequest
from reviews.selectors import review_request_timeline
from reviews.services import contact_add, contacts_opt_out
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
