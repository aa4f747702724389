"""The send path's hand-written statements (``reviews.rows``) must do what the ORM did."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import DatabaseError
from django.utils import timezone

from accounts.models import User
from reviews import rows
from reviews.models import Contact, Message, MessageTemplate, ReviewRequest
from reviews.services import dispatch_due, sending
from tests.delivery.conftest import dispatch_and_send, sms_request, step

pytestmark = pytest.mark.django_db


def _same_as_the_orm(instance) -> None:
    expected = type(instance).objects.get(pk=instance.pk)
    for field in type(instance)._meta.concrete_fields:
        assert getattr(instance, field.attname) == getattr(expected, field.attname), field.name
    assert not instance._state.adding


def test_the_claim_loads_the_claimed_row_with_everything_the_send_needs(business):
    sms_template = MessageTemplate.objects.create(
        owner=business, channel="sms", step=0, body="Hi {first_name}, {review_link} STOP=stop"
    )
    MessageTemplate.objects.create(  # same step, other channel: not this send's
        owner=business, channel="email", step=0, subject="s", body="e-mail {review_link}"
    )
    request = sms_request(business, first_name="Zoë", metadata={"order": {"id": 7}})
    (message_id,) = dispatch_due().claimed

    message, template = sending._claim(message_id)

    for instance in (message, message.review_request, message.review_request.contact):
        _same_as_the_orm(instance)
    _same_as_the_orm(message.review_request.owner)
    assert isinstance(message.review_request.owner, User)
    assert template.pk == sms_template.pk
    _same_as_the_orm(template)
    assert (message.status, message.attempts) == (Message.Status.SENDING, 1)
    assert message.to_address == request.contact.phone
    assert message.review_request.status == ReviewRequest.Status.SENDING
    # Claimed: a second run (a redelivered task) finds nothing to do.
    assert sending._claim(message_id) is None


def test_without_an_owner_template_the_claim_finds_none(business):
    sms_request(business)
    (message_id,) = dispatch_due().claimed
    _, template = sending._claim(message_id)
    assert template is None


def test_a_send_goes_out_with_the_owner_template_the_claim_read(business, twilio):
    MessageTemplate.objects.create(
        owner=business, channel="sms", step=0, body="Custom hello {first_name}: {review_link}"
    )
    request = sms_request(business, first_name="Ana")
    assert dispatch_and_send() == ["sent"]
    (call,) = twilio.calls
    assert call.body.startswith("Custom hello Ana: ")
    assert request.public_url() in call.body


def test_a_claim_that_finds_nothing_leaves_the_request_as_it_was(business, monkeypatch):
    """The request's ``scheduled → sending`` happens only with the claim: here the claim
    statement is made to match nothing, with the request locked and the row queued."""
    request = sms_request(business)
    (message_id,) = dispatch_due().claimed
    lock, claim, start, read = sending._claim_sql()
    monkeypatch.setattr(
        sending,
        "_claim_sql",
        lambda: (lock, claim.replace("WHERE id = %s", "WHERE 1 = 0 AND id = %s"), start, read),
    )
    assert sending._claim(message_id) is None
    request.refresh_from_db()
    assert request.status == ReviewRequest.Status.SCHEDULED and request.sending_at is None
    assert step(request, 0).status == Message.Status.QUEUED


def test_a_claim_of_a_row_that_is_not_queued_changes_nothing(business):
    request = sms_request(business)
    message = step(request, 0)  # pending: the dispatcher has not queued it
    assert sending._claim(str(message.pk)) is None
    request.refresh_from_db()
    message.refresh_from_db()
    assert request.status == ReviewRequest.Status.SCHEDULED
    assert (message.status, message.attempts) == (Message.Status.PENDING, 0)


def test_lock_request_loads_the_request_with_its_contact_and_owner(business):
    request = sms_request(business)
    locked = sending.lock_request(request.pk)
    _same_as_the_orm(locked)
    _same_as_the_orm(locked.contact)
    _same_as_the_orm(locked.owner)
    with pytest.raises(ReviewRequest.DoesNotExist):
        sending.lock_request("00000000-0000-0000-0000-000000000000")


def test_rows_update_writes_like_save_with_update_fields(business):
    request = sms_request(business)
    old = timezone.now() - timedelta(days=3)
    ReviewRequest.objects.filter(pk=request.pk).update(updated_at=old)
    request.refresh_from_db()
    request.ended_detail = "quote ' and Zoë"
    rows.update(request, ["ended_detail", "updated_at"])  # updated_at is auto_now
    request.refresh_from_db()
    assert request.ended_detail == "quote ' and Zoë"
    assert request.updated_at > old + timedelta(days=2)

    contact = request.contact
    contact.metadata = {"nested": {"list": [1, "two"]}}
    contact.sms_opted_out_at = timezone.now()
    rows.update(contact, ["metadata", "sms_opted_out_at"])
    _same_as_the_orm(contact)

    Contact.objects.filter(pk=contact.pk).delete()
    with pytest.raises(DatabaseError):
        rows.update(contact, ["first_name"])
