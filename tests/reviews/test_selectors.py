"""Selectors written as SQL by hand must load rows exactly as the ORM does."""

from __future__ import annotations

import pytest
from django.utils import timezone

from reviews import selectors
from reviews.models import Contact
from tests.factories import ContactFactory

pytestmark = pytest.mark.django_db


def test_contacts_matching_loads_every_field_like_the_orm(owner):
    contact = ContactFactory(
        owner=owner,
        email="Jane.Doe@Example.com",
        email_normalized="jane.doe@example.com",
        phone="+14155550123",
        metadata={"order": {"id": 7}, "tags": ["vip"], "note": "Zoë"},
    )
    Contact.objects.filter(pk=contact.pk).update(sms_opted_out_at=timezone.now())
    other = ContactFactory(owner=owner, email="x@example.com", email_normalized="x@example.com")

    for email, phone in (("jane.doe@example.com", ""), ("", "+14155550123"),
                         ("jane.doe@example.com", "+14155550123")):  # fmt: skip
        (found,) = selectors.contacts_matching(
            owner=owner, email_normalized=email, phone=phone, for_update=True
        )
        expected = Contact.objects.get(pk=contact.pk)
        for field in Contact._meta.concrete_fields:
            assert getattr(found, field.attname) == getattr(expected, field.attname), field.name
        assert not found._state.adding

    both = selectors.contacts_matching(
        owner=owner, email_normalized="x@example.com", phone="+14155550123"
    )
    assert [c.pk for c in both] == sorted([contact.pk, other.pk])
    assert selectors.contacts_matching(owner=owner, email_normalized="", phone="") == []


def test_contacts_matching_never_matches_a_blank_key(owner):
    ContactFactory(owner=owner, email="", email_normalized="", phone="+14155550123")
    assert selectors.contacts_matching(owner=owner, email_normalized="a@b.example", phone="") == []
