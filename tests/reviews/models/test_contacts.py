"""Row rules of contacts and their opt-outs (reviews.models.contacts), enforced by the database and
the models."""

from __future__ import annotations

from datetime import timedelta

import pytest

from reviews.models import Contact, OptOutEvent
from reviews.services import (
    contact_email_unsubscribe,
)
from tests.factories import ContactFactory
from tests.reviews.models.conftest import AT, _integrity_error
from tests.support.delivery import email_request

pytestmark = pytest.mark.django_db


def test_database_refuses_a_second_contact_with_the_same_email_for_one_owner(owner):
    ContactFactory(owner=owner, email="jane@example.com")
    _integrity_error(lambda: ContactFactory(owner=owner, email="Jane@Example.com"))


def test_database_refuses_a_second_contact_with_the_same_phone_for_one_owner(owner):
    ContactFactory(owner=owner, phone="+14155552671")
    _integrity_error(
        lambda: ContactFactory(owner=owner, email="", email_normalized="", phone="+14155552671")
    )


def test_contacts_without_email_or_without_phone_do_not_collide(owner):
    ContactFactory(owner=owner, email="", email_normalized="", phone="+14155552671")
    ContactFactory(owner=owner, email="", email_normalized="", phone="+12125550123")
    ContactFactory(owner=owner, email="a@example.com")
    ContactFactory(owner=owner, email="b@example.com")
    assert Contact.objects.count() == 4


def test_other_owners_may_hold_the_same_email_and_phone(owner, other_owner):
    ContactFactory(owner=owner, email="jane@example.com", phone="+14155552671")
    ContactFactory(owner=other_owner, email="jane@example.com", phone="+14155552671")


def test_database_refuses_a_contact_without_email_and_phone(owner):
    _integrity_error(lambda: ContactFactory(owner=owner, email="", email_normalized=""))


def test_database_refuses_an_email_without_its_dedup_key(owner):
    _integrity_error(
        lambda: ContactFactory(owner=owner, email="a@example.com", email_normalized="")
    )


def test_opt_out_records_the_first_time_and_source():
    contact = Contact(email="a@example.com", phone="+14155552671")
    assert contact.reachable_channels() == ["sms", "email"]
    assert contact.opt_out("sms", source="sms_reply", at=AT)
    assert contact.opt_out("sms", source="staff", at=AT + timedelta(days=1)) == []
    assert (contact.sms_opted_out_at, contact.sms_opt_out_source) == (AT, "sms_reply")
    assert contact.reachable_channels() == ["email"]
    contact.opt_in("sms")
    assert contact.reachable_channels() == ["sms", "email"]


def test_the_audit_outlives_the_contact(business):
    request = email_request(business)
    contact_email_unsubscribe(token=request.token)
    Contact.objects.filter(pk=request.contact_id).delete()
    event = OptOutEvent.objects.get()
    assert event.contact is None and event.address == request.contact.email
