"""Small defects a new owner met: the duplicated ending sentence, two meanings of "delivered"."""

from __future__ import annotations

import pytest
from django.utils import timezone

from portal.selectors import funnel
from reviews.dashboard import staff_dashboard
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


def test_portal_and_admin_count_delivered_alike(owner):
    """A click without a delivery receipt (many e-mail providers send none) proves arrival."""
    now = timezone.now()
    clicked = contact_add(
        owner=owner, data=contact_input(owner, {"email": "a@example.com"})
    ).review_request
    ReviewRequest.objects.filter(pk=clicked.pk).update(
        status="clicked", sent_at=now, clicked_at=now, ended_at=now, ended_reason="clicked"
    )
    receipt = contact_add(
        owner=owner, data=contact_input(owner, {"email": "b@example.com"})
    ).review_request
    ReviewRequest.objects.filter(pk=receipt.pk).update(
        status="delivered", sent_at=now, delivered_at=now
    )
    contact_add(owner=owner, data=contact_input(owner, {"email": "c@example.com"}))  # not sent yet

    portal = funnel(owner=owner, days=30)
    admin = {s.key: s.total for s in staff_dashboard(owner_id=owner.pk).series}
    assert portal.delivered == admin["delivered"] == 2
