"""The fenced statements of reviews/db.py behave as the ORM code they replace."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction
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


@pytest.mark.postgres
def test_contacts_matching_reads_only_the_matches_on_a_plan_made_for_any_value(owner):
    """The match runs as a prepared statement, which PostgreSQL may run on a generic plan
    (made without the values): that plan too must go by the unique keys, not read every
    contact of the owner."""
    Contact.objects.bulk_create(
        Contact(
            owner=owner,
            email=f"p{n}@example.com",
            email_normalized=f"p{n}@example.com",
            phone=f"+1415555{n:04d}",
        )
        for n in range(500)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE reviews_contact")
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")

    def rows_read() -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)"
                " FROM pg_stat_xact_user_tables WHERE relname = 'reviews_contact'"
            )
            return cursor.fetchone()[0]

    for email, phone in (("p7@example.com", ""), ("", "+14155550008"),
                         ("p9@example.com", "+14155550010")):  # fmt: skip
        before = rows_read()
        found = db.contacts_matching(owner=owner, email_normalized=email, phone=phone)
        assert len(found) == 1 + (email != "" and phone != "")
        assert rows_read() - before <= len(found)


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


def _sent_changes(now) -> dict:
    return {
        "status": Message.Status.SENT,
        "sent_at": now,
        "updated_at": now,
        "provider": "twilio",
        "provider_message_id": "SM0123",
        "to_address": "+14155550100",
        "last_error": "",
        "last_error_code": "",
    }


def _sending(request, n: int) -> Message:
    message = step(request, n)
    Message.objects.filter(pk=message.pk).update(status=Message.Status.SENDING, attempts=1)
    return message


def test_message_record_sent_rows_returns_the_rows_as_the_record_left_them(business):
    request = sms_request(business, metadata={"order": "A-1"})
    message = _sending(request, 0)
    now = timezone.now()
    with transaction.atomic():
        found = db.message_record_sent_rows(
            request_id=request.pk, message_id=message.pk, attempt=1, changes=_sent_changes(now)
        )
    assert found is not None
    got, messages = found
    assert [m.step for m in messages] == sorted(m.step for m in request.messages.all())
    assert len(messages) > 1
    assert messages[0].status == Message.Status.SENT and messages[0].sent_at == now
    # Every field equal to the ORM's read of the committed rows.
    for obj, model in (
        (got, ReviewRequest),
        (got.contact, Contact),
        *((m, Message) for m in messages),
    ):
        assert _fields(obj) == _fields(model.objects.get(pk=obj.pk))
    assert got.contact.metadata == {"order": "A-1"}


def test_message_record_sent_rows_moves_nothing_for_another_attempt_or_status(business):
    request = sms_request(business)
    message = _sending(request, 0)
    with transaction.atomic():
        assert (
            db.message_record_sent_rows(
                request_id=request.pk,
                message_id=message.pk,
                attempt=2,
                changes=_sent_changes(timezone.now()),
            )
            is None
        )
    Message.objects.filter(pk=message.pk).update(status=Message.Status.FAILED)
    with transaction.atomic():
        assert (
            db.message_record_sent_rows(
                request_id=request.pk,
                message_id=message.pk,
                attempt=1,
                changes=_sent_changes(timezone.now()),
            )
            is None
        )
    assert step(request, 0).status == Message.Status.FAILED


@pytest.mark.postgres
def test_message_record_sent_rows_reads_what_the_lock_holder_committed(transactional_db, business):
    """A cancel that ends the request (and its other messages) while the outcome waits for the
    request's lock: the outcome sees the request and messages as the cancel left them, not as
    they were when its statement started."""
    request = sms_request(business)
    message = _sending(request, 0)
    locked, release = threading.Event(), threading.Event()

    errors: list[BaseException] = []

    def cancel_holding_the_lock():
        try:
            cancel()
        except BaseException as exc:
            errors.append(exc)
            locked.set()
        finally:
            connection.close()

    def cancel():
        with transaction.atomic():
            held = ReviewRequest.objects.select_for_update().get(pk=request.pk)
            locked.set()
            release.wait(5)
            now = timezone.now()
            ended = ReviewRequest.Status.CANCELLED
            reason = ReviewRequest.EndedReason.CANCELLED
            held.save(update_fields=held.transition(ended, at=now, reason=reason))
            held.cancel_open_messages(at=now)

    canceller = threading.Thread(target=cancel_holding_the_lock)
    canceller.start()
    assert locked.wait(5)
    threading.Timer(0.3, release.set).start()
    with transaction.atomic():
        found = db.message_record_sent_rows(
            request_id=request.pk,
            message_id=message.pk,
            attempt=1,
            changes=_sent_changes(timezone.now()),
        )
    canceller.join(5)
    assert not errors
    assert found is not None
    got, messages = found
    assert got.status == ReviewRequest.Status.CANCELLED
    assert messages[0].status == Message.Status.SENT
    assert all(m.status == Message.Status.CANCELLED for m in messages[1:])
