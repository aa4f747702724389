"""The fenced statements of reviews/db.py behave as the ORM code they replace."""

from __future__ import annotations

import pytest

from reviews import db
from tests.factories import ContactFactory

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
