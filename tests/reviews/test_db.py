"""The fenced statements of reviews/db.py behave as the ORM code they replace."""

from __future__ import annotations

import copy
import threading
import uuid
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from reviews import db
from reviews.models import Contact, Message, ReviewRequest
from tests.factories import ContactFactory
from tests.support.delivery import sms_request, step

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


# --- Each statement and its ORM twin give the same rows -----------------------------------------
#
# On PostgreSQL each fenced statement runs, then its ORM twin (the code it replaced, which SQLite
# runs), on the same rows, each in a savepoint rolled back after: what they return and the three
# tables after them must be equal field by field, including when nothing is claimed or moved.


def _tables() -> dict:
    return {
        model.__name__: [_fields(obj) for obj in model.objects.order_by("pk")]
        for model in (Contact, ReviewRequest, Message)
    }


def _undone(run, describe) -> tuple:
    """What ``run()`` returned (through ``describe``) and the tables after it; then undone."""
    with transaction.atomic():
        result = describe(run())
        after = _tables()
        transaction.set_rollback(True)
    return result, after


def _same_rows(statement, twin, describe) -> tuple:
    """Both runs' results (equal), and the tables before, to tell a run that changed nothing."""
    before = _tables()
    by_statement = _undone(statement, describe)
    by_twin = _undone(twin, describe)
    assert by_statement == by_twin
    assert _tables() == before
    return by_statement, before


def _contacts(found: list[Contact]) -> list[dict]:
    return [_fields(contact) for contact in found]


@pytest.mark.postgres
def test_contacts_matching_and_its_twin_find_the_same_contacts(owner):
    ContactFactory(
        owner=owner, email_normalized="jane@example.com", phone="+14155550123", metadata={"a": 1}
    )
    ContactFactory(owner=owner, email="x@example.com", email_normalized="x@example.com", phone="")
    ContactFactory(owner=owner, email="", email_normalized="", phone="+14155550199")
    ContactFactory(email_normalized="jane@example.com", phone="+14155550123")  # another owner

    for email, phone, expected in (
        ("jane@example.com", "", 1),
        ("", "+14155550123", 1),
        ("x@example.com", "+14155550123", 2),
        ("x@example.com", "+14155550199", 2),
        ("nobody@example.com", "+14155559999", 0),
        ("", "", 0),
    ):
        keys = {"owner": owner, "email_normalized": email, "phone": phone}
        (found, _), _ = _same_rows(
            lambda keys=keys: db.contacts_matching(**keys),
            lambda keys=keys: db.contacts_matching_orm(**keys),
            _contacts,
        )
        assert len(found) == expected, (email, phone)


def _new_rows(owner, contact: Contact | None):
    """Unsaved rows of a new request, as ``contact_add`` makes them (with a new contact, or for
    one that exists)."""
    now = timezone.now()
    new_contact = contact is None
    if contact is None:
        contact = Contact(
            owner=owner,
            first_name="Jane",
            email="Jane@Example.com",
            email_normalized="jane@example.com",
            phone="+14155550123",
            metadata={"order": "A-1", "tags": ["x", 2]},
        )
    request = ReviewRequest(owner=owner, contact=contact, scheduled_for=now)
    steps = [(0, "sms", timedelta(0)), (1, "email", timedelta(hours=72, microseconds=5))]
    messages = [
        Message(
            review_request=request,
            step=n,
            channel=channel,
            planned_offset=offset,
            status=Message.Status.PENDING if n == 0 else Message.Status.PLANNED,
            due_at=now if n == 0 else None,
        )
        for n, channel, offset in steps
    ]
    return (contact if new_contact else None), request, messages


@pytest.mark.postgres
@pytest.mark.parametrize("new_contact", [True, False])
def test_review_request_insert_and_its_twin_write_the_same_rows(owner, time_machine, new_contact):
    time_machine.move_to(timezone.now(), tick=False)  # auto_now_add: the same instant twice
    rows = _new_rows(owner, None if new_contact else ContactFactory(owner=owner))

    def run(insert):
        contact, request, messages = copy.deepcopy(rows)
        insert(contact=contact, request=request, messages=messages)

    (_, after), before = _same_rows(
        lambda: run(db.review_request_insert),
        lambda: run(db.review_request_insert_orm),
        lambda _: None,
    )
    assert len(after["Message"]) == len(before["Message"]) + 2
    assert len(after["Contact"]) == len(before["Contact"]) + new_contact


def _claimed(message: Message | None) -> tuple | None:
    if message is None:
        return None
    request = message.review_request
    return _fields(message), _fields(request), _fields(request.contact)


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("case", "claimed"),
    [
        ("first step", True),  # the request started
        ("first step, request already sending", True),  # not started again
        ("first step again", True),  # after a transient failure: sending_at kept
        ("follow-up", True),  # the request is not started
        ("follow-up, request scheduled", True),  # nor here: only a first step starts it
        ("by e-mail", True),  # the e-mail address captured
        ("not queued", False),
        ("no such message", False),
    ],
)
def test_message_claim_and_its_twin_claim_the_same_rows(business, case, claimed):
    request = sms_request(business, email="jane@example.com", metadata={"order": "A-1"})
    Message.objects.filter(review_request=request).update(status=Message.Status.PLANNED)
    message = step(request, 1 if case.startswith("follow-up") else 0)
    if case == "follow-up":
        ReviewRequest.objects.filter(pk=request.pk).update(status=ReviewRequest.Status.SENT)
    if case == "first step again":
        earlier = timezone.now() - timedelta(minutes=5)
        ReviewRequest.objects.filter(pk=request.pk).update(sending_at=earlier)
    if case == "first step, request already sending":
        ReviewRequest.objects.filter(pk=request.pk).update(status=ReviewRequest.Status.SENDING)
    if case == "by e-mail":
        Message.objects.filter(pk=message.pk).update(channel="email")
    if case != "not queued":
        Message.objects.filter(pk=message.pk).update(status=Message.Status.QUEUED)
    message_id = uuid.uuid4() if case == "no such message" else message.pk
    now = timezone.now()

    (found, after), before = _same_rows(
        lambda: db.message_claim(message_id=message_id, now=now),
        lambda: db.message_claim_orm(message_id=message_id, now=now),
        _claimed,
    )
    assert (found is not None) == claimed
    assert (after != before) == claimed


def _recorded(found: tuple[ReviewRequest, list[Message]] | None) -> tuple | None:
    if found is None:
        return None
    request, messages = found
    assert all(m.review_request is request for m in messages)
    return _fields(request), _fields(request.contact), [_fields(m) for m in messages]


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("case", "moved"),
    [
        ("sending", True),
        ("unknown", True),  # an unknown outcome found sent
        ("another attempt", False),
        ("failed", False),  # not a status it may leave for sent
        ("another request's message", False),
    ],
)
def test_message_record_sent_rows_and_its_twin_move_the_same_rows(business, case, moved):
    request = sms_request(business, metadata={"order": "A-1"})
    message = _sending(request, 0)
    if case in ("unknown", "failed"):
        Message.objects.filter(pk=message.pk).update(status=case)
    request_id = sms_request(business).pk if case == "another request's message" else request.pk
    attempt = 2 if case == "another attempt" else 1
    keys = {
        "request_id": request_id,
        "message_id": message.pk,
        "attempt": attempt,
        "changes": _sent_changes(timezone.now()),
    }

    (found, after), before = _same_rows(
        lambda: db.message_record_sent_rows(**keys),
        lambda: db.message_record_sent_rows_orm(**keys),
        _recorded,
    )
    assert (found is not None) == moved
    assert (after != before) == moved
