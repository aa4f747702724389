"""The fenced statements of reviews/db.py behave as the ORM code they replace."""

from __future__ import annotations

import pytest
from django.utils import timezone

from reviews import db
from reviews.models import Contact, Message, ReviewRequest
from tests.factories import ContactFactory
from tests.reviews.conftest import sms_request, step

pytestmark = pytest.mark.django_db


def test_contacts_matching_finds_the_owners_contacts_by_email_or_phone(owner):
    contact = ContactFactory(
        owner=owner,
        email="Jane.Doe@Example.com",
        email_normalized="jane.doe@example.com",
        phone="+14155550123",
    )
    other = ContactFactory(owner=owner, email="x@example.com", email_normalized="x@example.com")
    ContactFactory(email="jane.doe@example.com", email_normalized="jane.doe@example.com")

    for email, phone in (("jane.doe@example.com", ""), ("", "+14155550123"),
                         ("jane.doe@example.com", "+14155550123")):  # fmt: skip
        found = db.contacts_matching(owner=owner, email_normalized=email, phone=phone)
        assert [c.pk for c in found] == [contact.pk]

    both = db.contacts_matching(owner=owner, email_normalized="x@example.com", phone="+14155550123")
    assert [c.pk for c in both] == sorted([contact.pk, other.pk])
    assert db.contacts_matching(owner=owner, email_normalized="", phone="") == []


def test_contacts_matching_never_matches_a_blank_key(owner):
    ContactFactory(owner=owner, email="", email_normalized="", phone="+14155550123")
    assert db.contacts_matching(owner=owner, email_normalized="a@b.example", phone="") == []


def _fields(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


@pytest.mark.parametrize("first_step", [True, False])
def test_message_claim_returns_the_rows_as_the_claim_left_them(business, first_step):
    request = sms_request(business, metadata={"order": "A-1"})
    Message.objects.filter(review_request=request).update(status=Message.Status.PLANNED)
    if not first_step:
        ReviewRequest.objects.filter(pk=request.pk).update(status=ReviewRequest.Status.SENT)
    message = step(request, 0 if first_step else 1)
    Message.objects.filter(pk=message.pk).update(status=Message.Status.QUEUED)

    claimed = db.message_claim(message_id=message.pk, now=timezone.now())

    assert claimed is not None and claimed.status == Message.Status.SENDING
    assert claimed.to_address == request.contact.phone and claimed.attempts == 1
    # Every field equal to the ORM's read of the committed rows, the request started or not.
    for got, model in (
        (claimed, Message),
        (claimed.review_request, ReviewRequest),
        (claimed.review_request.contact, Contact),
    ):
        assert _fields(got) == _fields(model.objects.get(pk=got.pk))
    status = ReviewRequest.Status.SENDING if first_step else ReviewRequest.Status.SENT
    assert claimed.review_request.status == status
    assert db.message_claim(message_id=message.pk, now=timezone.now()) is None  # claimed once
