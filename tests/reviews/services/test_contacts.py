"""reviews.services.contact_add: dedup, cooldown, channel plan, quiet hours, message rows, the
dispatcher kicked on commit for a contact due now; and (PostgreSQL) concurrent adds of one person
converging on one contact and one request. At a location: contacts stay one per account,
requests are one per contact and location."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, time, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from connector_api.models import IdempotencyKey
from reviews.models import (
    BusinessSettings,
    Contact,
    Message,
    ReviewRequest,
)
from reviews.services import (
    ContactAddOutcome,
    contact_add,
    dispatcher_kick,
)
from tests.factories import (
    ContactFactory,
    LocationFactory,
    ReviewRequestFactory,
    ReviewSiteFactory,
    UserFactory,
    first_location,
)
from tests.support.contacts import contact_input
from tests.support.delivery import email_request
from tests.support.oauth import issue_tokens

pytestmark = pytest.mark.django_db

# 16:00 UTC: 12:00 in New York (the owner's zone), 09:00 in San Francisco.
NOON_IN_NEW_YORK = datetime(2026, 6, 10, 16, 0, tzinfo=UTC)
SF_PHONE = "+14155552671"


@pytest.fixture
def now(time_machine):
    time_machine.move_to(NOON_IN_NEW_YORK, tick=False)
    return NOON_IN_NEW_YORK


@pytest.fixture
def policy(owner):
    return BusinessSettings.for_owner(owner)


def add(owner, **data):
    return contact_add(owner=owner, data=contact_input(owner, data))


def steps(request: ReviewRequest) -> list[tuple]:
    return [
        (m.step, m.channel, m.status, m.due_at, m.planned_offset)
        for m in request.messages.order_by("step")
    ]


# --- a new contact --------------------------------------------------------------------------------


def test_the_new_rows_read_back_as_they_were_created(owner, now):
    """Whatever way the new rows go in (one statement on PostgreSQL), every field reads back
    through the ORM as the returned instances hold it."""
    result = add(
        owner,
        first_name="Zoë",
        last_name='O\'Brien \\ "Quotes"',
        email="zoe@example.com",
        mobile_phone_number=SF_PHONE,
        metadata={"order": {"id": 7, "total": 12.5}, "tags": ["vip", None, True], "note": "日本"},
    )
    for obj in (result.contact, result.review_request):
        stored = type(obj).objects.get(pk=obj.pk)
        for field in type(obj)._meta.concrete_fields:
            assert getattr(stored, field.attname) == getattr(obj, field.attname), field.name
        assert not obj._state.adding
    assert steps(result.review_request)[1][4] == timedelta(hours=72)
    assert result.contact.metadata["note"] == "日本"


def test_add_contact_creates_contact_request_and_every_message_row(owner, now):
    result = add(owner, first_name="Jane", last_name="Smith", email="Jane@Example.com")

    assert result.created and result.contact_created
    assert result.outcome == ContactAddOutcome.SCHEDULED
    contact = Contact.objects.get()
    assert (contact.email, contact.email_normalized, contact.phone) == (
        "Jane@Example.com",
        "jane@example.com",
        "",
    )
    assert contact.source == Contact.Source.API
    request = ReviewRequest.objects.get()
    assert request.status == ReviewRequest.Status.SCHEDULED
    assert request.scheduled_for == now
    assert request.owner == owner and request.contact == contact
    assert steps(request) == [
        (0, "email", "pending", now, timedelta(0)),
        (1, "email", "planned", None, timedelta(days=3)),
        (2, "email", "planned", None, timedelta(days=7)),
    ]
    assert result.message == (
        "Review request scheduled for Jane Smith by e-mail at 2026-06-10 16:00 UTC. "
        "Then up to 2 follow-ups by e-mail, stopped as soon as they click or opt out."
    )


def test_sms_goes_first_when_a_phone_is_known_and_follow_ups_use_email(owner, now):
    result = add(owner, first_name="Jane", email="jane@example.com", mobile_phone_number=SF_PHONE)
    assert [(s[1], s[2]) for s in steps(result.review_request)] == [
        ("sms", "pending"),
        ("email", "planned"),
        ("email", "planned"),
    ]
    assert "by SMS at 2026-06-10 16:00 UTC" in result.message


def test_phone_only_contact_gets_sms_follow_ups(owner, now):
    result = add(owner, mobile_phone_number="(415) 555-2671")
    assert [s[1] for s in steps(result.review_request)] == ["sms", "sms", "sms"]
    assert result.contact.phone == SF_PHONE
    assert result.contact.email == ""


def test_business_can_prefer_email_first(owner, policy, now):
    policy.initial_channel = BusinessSettings.InitialChannel.EMAIL
    policy.save()
    result = add(owner, email="jane@example.com", mobile_phone_number=SF_PHONE)
    assert [s[1] for s in steps(result.review_request)] == ["email", "sms", "sms"]


def test_business_can_keep_follow_ups_on_the_first_channel(owner, policy, now):
    policy.follow_up_other_channel = False
    policy.save()
    result = add(owner, email="jane@example.com", mobile_phone_number=SF_PHONE)
    assert [s[1] for s in steps(result.review_request)] == ["sms", "sms", "sms"]


def test_business_follow_up_offsets_are_frozen_on_the_rows(owner, policy, now):
    policy.follow_up_offsets_hours = [24]
    policy.save()
    result = add(owner, email="jane@example.com")
    assert steps(result.review_request) == [
        (0, "email", "pending", now, timedelta(0)),
        (1, "email", "planned", None, timedelta(hours=24)),
    ]
    policy.follow_up_offsets_hours = [48, 96]
    policy.save()
    assert result.review_request.messages.get(step=1).planned_offset == timedelta(hours=24)
    assert "Then up to 1 follow-up by e-mail" in result.message


def test_no_follow_ups_when_the_business_sets_none(owner, policy, now):
    policy.follow_up_offsets_hours = []
    policy.save()
    result = add(owner, email="jane@example.com")
    assert len(steps(result.review_request)) == 1
    assert "follow-up" not in result.message


def test_delay_hours_moves_scheduled_for(owner, now):
    result = add(owner, email="jane@example.com", delay_hours="26")
    assert result.review_request.scheduled_for == now + timedelta(hours=26)
    assert result.review_request.messages.get(step=0).due_at == now + timedelta(hours=26)


def test_without_delay_hours_the_business_default_applies(owner, policy, now):
    policy.default_delay_hours = 4
    policy.save()
    assert add(owner, email="a@example.com").review_request.scheduled_for == now + timedelta(
        hours=4
    )
    explicit_zero = add(owner, email="b@example.com", delay_hours=0)
    assert explicit_zero.review_request.scheduled_for == now


def test_source_is_recorded_on_a_new_contact(owner, now):
    result = contact_add(
        owner=owner, data=contact_input(owner, {"email": "jane@example.com"}), source="import"
    )
    assert result.contact.source == Contact.Source.IMPORT


def test_each_request_gets_its_own_unguessable_token(owner, now):
    first = add(owner, email="a@example.com").review_request
    second = add(owner, email="b@example.com").review_request
    assert first.token != second.token
    assert len(first.token) >= 22


# --- quiet hours ----------------------------------------------------------------------------------


def test_sms_in_the_recipients_night_waits_for_their_morning(owner, time_machine):
    # 06:30 UTC is 23:30 in San Francisco (the phone's zone) and 02:30 in New York.
    time_machine.move_to(datetime(2026, 6, 10, 6, 30, tzinfo=UTC), tick=False)
    result = add(owner, first_name="Jane", mobile_phone_number=SF_PHONE)
    expected = datetime(2026, 6, 10, 15, 0, tzinfo=UTC)  # 08:00 in San Francisco
    assert result.review_request.scheduled_for == expected
    assert result.review_request.messages.get(step=0).due_at == expected
    assert (
        "Review request scheduled for Jane by SMS at 2026-06-10 15:00 UTC. "
        "Moved from 2026-06-10 06:30 UTC: SMS messages go out only between 08:00 and 21:00 in "
        "the recipient's time zone (America/Los_Angeles)."
    ) in result.message


def test_quiet_hours_apply_to_the_time_after_the_delay(owner, time_machine):
    time_machine.move_to(datetime(2026, 6, 10, 20, 0, tzinfo=UTC), tick=False)  # 13:00 in SF
    result = add(owner, mobile_phone_number=SF_PHONE, delay_hours=10)  # 23:00 in SF
    assert result.review_request.scheduled_for == datetime(2026, 6, 11, 15, 0, tzinfo=UTC)


def test_email_is_not_held_back_by_default(owner, time_machine):
    night = datetime(2026, 6, 10, 6, 30, tzinfo=UTC)
    time_machine.move_to(night, tick=False)
    result = add(owner, email="jane@example.com")
    assert result.review_request.scheduled_for == night
    assert "Moved" not in result.message


def test_quiet_hours_for_email_use_the_business_zone_without_a_phone(owner, policy, time_machine):
    policy.send_window_applies_to = BusinessSettings.WindowAppliesTo.ALL
    policy.save()
    time_machine.move_to(datetime(2026, 6, 10, 6, 30, tzinfo=UTC), tick=False)  # 02:30 in NY
    result = add(owner, email="jane@example.com")
    assert result.review_request.scheduled_for == datetime(2026, 6, 10, 12, 0, tzinfo=UTC)
    assert "(America/New_York)" in result.message


def test_business_can_turn_quiet_hours_off(owner, policy, time_machine):
    policy.send_window_applies_to = BusinessSettings.WindowAppliesTo.NONE
    policy.save()
    night = datetime(2026, 6, 10, 6, 30, tzinfo=UTC)
    time_machine.move_to(night, tick=False)
    assert add(owner, mobile_phone_number=SF_PHONE).review_request.scheduled_for == night


def test_business_window_is_used(owner, policy, time_machine):
    policy.send_window_start, policy.send_window_end = time(10), time(18)
    policy.save()
    time_machine.move_to(datetime(2026, 6, 10, 16, 0, tzinfo=UTC), tick=False)  # 09:00 in SF
    result = add(owner, mobile_phone_number=SF_PHONE)
    assert result.review_request.scheduled_for == datetime(2026, 6, 10, 17, 0, tzinfo=UTC)


# --- dedup ----------------------------------------------------------------------------------------


def test_adding_the_same_email_twice_creates_one_contact_and_one_request(owner, now):
    first = add(owner, first_name="Jane", last_name="Smith", email="jane@example.com")
    second = add(owner, email="  JANE@example.COM ")

    assert not second.created and not second.contact_created
    assert second.outcome == ContactAddOutcome.ALREADY_ACTIVE
    assert second.review_request == first.review_request
    assert Contact.objects.count() == 1 and ReviewRequest.objects.count() == 1
    assert Message.objects.count() == 3
    assert second.message.startswith(
        "Jane Smith already has a review request scheduled for 2026-06-10 16:00 UTC; "
        "no new request created. Matched the existing contact by e-mail; details updated."
    )


@pytest.mark.parametrize(
    "written", ["(415) 555-2671", "415.555.2671", "+1 415 555 2671", "001 415 555 2671"]
)
def test_the_same_phone_in_another_format_is_the_same_contact(owner, now, written):
    first = add(owner, mobile_phone_number=SF_PHONE)
    second = add(owner, mobile_phone_number=written)
    assert second.contact == first.contact
    assert second.review_request == first.review_request
    assert Contact.objects.count() == 1 and ReviewRequest.objects.count() == 1


def test_matched_contact_is_updated_with_the_non_empty_values_and_metadata_merged(owner, now):
    add(
        owner,
        first_name="Jane",
        last_name="Smith",
        company_name="Acme",
        email="jane@example.com",
        metadata={"order": "1", "store": "north"},
    )
    result = add(
        owner,
        first_name="Janet",
        last_name="",
        email="jane@example.com",
        mobile_phone_number=SF_PHONE,
        metadata={"order": "2", "campaign": "june"},
    )
    contact = Contact.objects.get()
    assert (contact.first_name, contact.last_name, contact.company_name, contact.phone) == (
        "Janet",
        "Smith",
        "Acme",
        SF_PHONE,
    )
    assert contact.metadata == {"order": "2", "store": "north", "campaign": "june"}
    assert result.contact == contact


def test_matching_by_phone_adds_the_new_email(owner, now):
    add(owner, mobile_phone_number=SF_PHONE)
    result = add(owner, email="jane@example.com", mobile_phone_number="4155552671")
    assert result.contact.email_normalized == "jane@example.com"
    assert "Matched the existing contact by phone number; details updated." in result.message


def test_email_match_wins_and_the_phone_of_another_contact_is_not_taken(owner, now):
    by_email = add(owner, first_name="Ann", email="ann@example.com").contact
    by_phone = add(owner, first_name="Bob", mobile_phone_number=SF_PHONE).contact

    result = add(owner, email="ann@example.com", mobile_phone_number=SF_PHONE)

    assert result.contact == by_email
    by_email.refresh_from_db()
    by_phone.refresh_from_db()
    assert by_email.phone == ""
    assert by_phone.phone == SF_PHONE
    assert (
        "The phone number +14155552671 belongs to another contact (Bob), so it was not added "
        "to this one."
    ) in result.message
    assert Contact.objects.count() == 2


def test_email_match_takes_a_new_phone_nobody_has(owner, now):
    add(owner, email="ann@example.com", mobile_phone_number="+12125550123")
    result = add(owner, email="ann@example.com", mobile_phone_number=SF_PHONE)
    assert result.contact.phone == SF_PHONE


def test_two_owners_adding_the_same_person_get_separate_contacts(owner, other_owner, now):
    mine = add(owner, email="jane@example.com", mobile_phone_number=SF_PHONE)
    theirs = add(other_owner, email="jane@example.com", mobile_phone_number=SF_PHONE)
    assert mine.contact != theirs.contact
    assert theirs.created and theirs.contact_created
    assert ReviewRequest.objects.count() == 2


def test_an_in_progress_request_is_returned_with_its_real_status(owner, now):
    first = add(owner, first_name="Jane", email="jane@example.com").review_request
    first.transition(ReviewRequest.Status.SENDING, at=now)
    first.transition(ReviewRequest.Status.SENT, at=now)
    first.save()
    result = add(owner, email="jane@example.com")
    assert result.review_request == first and not result.created
    assert result.review_request.status == ReviewRequest.Status.SENT
    assert result.message.startswith(
        "Jane already has a review request in progress (first message sent 2026-06-10 16:00 UTC)"
    )


# --- cooldown -------------------------------------------------------------------------------------


def _finish(request: ReviewRequest, *, at: datetime, to=ReviewRequest.Status.CLICKED) -> None:
    request.transition(ReviewRequest.Status.SENDING, at=at)
    request.transition(ReviewRequest.Status.SENT, at=at)
    request.transition(to, at=at, reason=ReviewRequest.EndedReason.CLICKED)
    request.save()
    request.cancel_open_messages(at=at)


def test_within_the_cooldown_the_ended_request_is_returned(owner, time_machine):
    time_machine.move_to(datetime(2026, 6, 1, 16, 0, tzinfo=UTC), tick=False)
    first = add(owner, first_name="Jane", email="jane@example.com").review_request
    _finish(first, at=datetime(2026, 6, 2, 16, 0, tzinfo=UTC))

    time_machine.move_to(datetime(2026, 8, 30, 16, 0, tzinfo=UTC), tick=False)  # day 89
    result = add(owner, email="jane@example.com")

    assert result.outcome == ContactAddOutcome.COOLDOWN
    assert result.review_request == first and not result.created
    assert result.review_request.status == ReviewRequest.Status.CLICKED
    assert result.message.startswith(
        "Jane was sent a review request on 2026-06-02 (now clicked); no new request until "
        "2026-08-31 (90-day cooldown)."
    )
    assert ReviewRequest.objects.count() == 1


def test_after_the_cooldown_a_new_request_is_created(owner, time_machine):
    time_machine.move_to(datetime(2026, 6, 1, 16, 0, tzinfo=UTC), tick=False)
    first = add(owner, email="jane@example.com").review_request
    _finish(first, at=datetime(2026, 6, 2, 16, 0, tzinfo=UTC))

    time_machine.move_to(datetime(2026, 8, 31, 16, 0, tzinfo=UTC), tick=False)  # day 90
    result = add(owner, email="jane@example.com")

    assert result.created and result.outcome == ContactAddOutcome.SCHEDULED
    assert result.review_request != first
    assert result.contact == first.contact
    assert ReviewRequest.objects.count() == 2


def test_the_business_sets_the_cooldown(owner, policy, time_machine):
    policy.cooldown_days = 10
    policy.save()
    time_machine.move_to(datetime(2026, 6, 1, 16, 0, tzinfo=UTC), tick=False)
    first = add(owner, email="jane@example.com").review_request
    _finish(first, at=datetime(2026, 6, 1, 17, 0, tzinfo=UTC))
    time_machine.move_to(datetime(2026, 6, 11, 16, 0, tzinfo=UTC), tick=False)
    assert not add(owner, email="jane@example.com").created
    time_machine.move_to(datetime(2026, 6, 11, 17, 0, tzinfo=UTC), tick=False)
    assert add(owner, email="jane@example.com").created


def test_a_request_cancelled_before_anything_was_sent_starts_no_cooldown(owner, now):
    first = add(owner, email="jane@example.com").review_request
    first.transition(
        ReviewRequest.Status.CANCELLED, at=now, reason=ReviewRequest.EndedReason.CANCELLED
    )
    first.save()
    first.cancel_open_messages(at=now)

    result = add(owner, email="jane@example.com")
    assert result.created and result.review_request != first


# --- opt-outs -------------------------------------------------------------------------------------


def test_sms_opt_out_sends_everything_by_email(owner, now):
    contact = add(owner, email="jane@example.com", mobile_phone_number=SF_PHONE).contact
    ReviewRequest.objects.all().delete()
    contact.save(update_fields=contact.opt_out("sms", source="sms_reply", at=now))

    result = add(owner, email="jane@example.com")
    assert [s[1] for s in steps(result.review_request)] == ["email", "email", "email"]
    assert "No SMS: the contact opted out of it." in result.message


def test_contact_opted_out_of_every_channel_gets_no_request(owner, now):
    contact = add(owner, first_name="Jane", mobile_phone_number=SF_PHONE).contact
    ReviewRequest.objects.all().delete()
    contact.save(update_fields=contact.opt_out("sms", source="sms_reply", at=now))

    first = add(owner, mobile_phone_number=SF_PHONE)
    assert first.outcome == ContactAddOutcome.OPTED_OUT
    assert first.created
    request = first.review_request
    assert request.status == ReviewRequest.Status.OPTED_OUT
    assert request.ended_reason == ReviewRequest.EndedReason.OPTED_OUT
    assert request.ended_at == now and request.opted_out_at == now
    assert not request.messages.exists()
    assert first.message.startswith("Jane has opted out of SMS; no review request will be sent.")

    again = add(owner, mobile_phone_number=SF_PHONE)
    assert again.review_request == request and not again.created
    assert ReviewRequest.objects.count() == 1


# --- bad input ------------------------------------------------------------------------------------


def test_bad_input_raises_per_field_errors_and_writes_nothing(owner, now):
    with pytest.raises(ValidationError) as exc:
        add(owner, email="not-an-email", delay_hours="1.5")
    assert set(exc.value.message_dict) == {"email", "delay_hours"}
    assert not Contact.objects.exists() and not ReviewRequest.objects.exists()


def test_missing_email_and_phone_is_an_error_on_both_fields(owner, now):
    with pytest.raises(ValidationError) as exc:
        add(owner, first_name="Jane", email=" ", mobile_phone_number="")
    assert set(exc.value.message_dict) == {"email", "mobile_phone_number"}


def test_metadata_that_would_grow_past_16_kb_when_merged_is_refused(owner, now):
    add(owner, email="jane@example.com", metadata={"a": "x" * 9000})
    with pytest.raises(ValidationError) as exc:
        add(owner, email="jane@example.com", metadata={"b": "y" * 9000})
    assert "16 KB" in exc.value.message_dict["metadata"][0]
    assert Contact.objects.get().metadata == {"a": "x" * 9000}


def test_phone_numbers_without_country_code_use_the_owners_region(now):
    british = UserFactory(default_region="GB", time_zone="Europe/London")
    result = contact_add(
        owner=british, data=contact_input(british, {"mobile_phone_number": "07400 123456"})
    )
    assert result.contact.phone == "+447400123456"


THREADS = 20


PHONE_FORMATS = [
    "+14155552671",
    "(415) 555-2671",
    "415.555.2671",
    "415-555-2671",
    "4155552671",
    "1 415 555 2671",
    "+1 415 555 2671",
    "+1 (415) 555-2671",
    "001 415 555 2671",
    "011 1 415 555 2671",
]


def run_together(work: Callable[[int], object], n: int = THREADS) -> list[object]:
    """Run ``work(i)`` in ``n`` threads started at once; return results (or the exceptions)."""
    barrier = threading.Barrier(n)
    results: list[object] = [None] * n

    def target(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = work(i)
        except Exception as exc:  # collected and asserted on below
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    return results


def assert_one_contact_one_request(results: list[object]) -> None:
    errors = [r for r in results if isinstance(r, BaseException)]
    assert errors == []
    assert Contact.objects.count() == 1
    assert ReviewRequest.objects.count() == 1
    assert Message.objects.count() == 3


@pytest.fixture
def settings_row(owner):
    return BusinessSettings.for_owner(owner)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_adds_of_one_email_make_one_contact_and_one_request(owner, settings_row):
    results = run_together(
        lambda i: contact_add(
            owner=owner,
            data=contact_input(
                owner, {"email": f"  Jane@Example.COM{' ' * (i % 3)}", "first_name": "J"}
            ),
        )
    )
    assert_one_contact_one_request(results)
    assert sum(r.created for r in results) == 1
    assert {r.review_request.pk for r in results} == {ReviewRequest.objects.get().pk}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_adds_of_one_phone_in_different_formats_converge(owner, settings_row):
    results = run_together(
        lambda i: contact_add(
            owner=owner,
            data=contact_input(
                owner, {"mobile_phone_number": PHONE_FORMATS[i % len(PHONE_FORMATS)]}
            ),
        )
    )
    assert_one_contact_one_request(results)
    assert Contact.objects.get().phone == "+14155552671"
    assert sum(r.created for r in results) == 1


def _clients(owner, n: int) -> list[APIClient]:
    access, _ = issue_tokens(owner, scope="write")
    clients = []
    for _ in range(n):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
        clients.append(client)
    return clients


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_posts_of_one_email_answer_one_201_and_nineteen_200(owner, settings_row):
    clients = _clients(owner, THREADS)
    results = run_together(
        lambda i: clients[i].post(
            "/api/zapier/send-review-request",
            {"email": "jane@example.com", "mobile_phone_number": PHONE_FORMATS[i % 10]},
            format="json",
        )
    )
    assert_one_contact_one_request(results)
    statuses = sorted(r.status_code for r in results)
    assert statuses == [200] * (THREADS - 1) + [201]
    assert len({r.json()["id"] for r in results}) == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_retries_with_one_idempotency_key_run_the_work_once(owner, settings_row):
    clients = _clients(owner, 10)
    results = run_together(
        lambda i: clients[i].post(
            "/api/zapier/send-review-request",
            {"email": "jane@example.com"},
            format="json",
            HTTP_IDEMPOTENCY_KEY="zap-run-42",
        ),
        n=10,
    )
    assert [r for r in results if isinstance(r, BaseException)] == []
    statuses = [r.status_code for r in results]
    # One ran it; the others saw it running (409) or finished (a 201 replay).
    assert set(statuses) <= {201, 409}
    assert sum(1 for r in results if r.status_code == 201 and "Idempotent-Replayed" not in r) == 1
    assert ReviewRequest.objects.count() == 1
    assert IdempotencyKey.objects.get().state == IdempotencyKey.State.DONE


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_without_the_advisory_locks_the_unique_constraints_still_converge(
    owner, settings_row, monkeypatch
):
    # A writer that bypassed the locks: the constraints fire and the losers run again.
    monkeypatch.setattr("reviews.db.contact_add_lock", lambda **kwargs: None)
    results = run_together(
        lambda i: contact_add(
            owner=owner, data=contact_input(owner, {"email": "jane@example.com"})
        ),
        n=10,
    )
    errors = [r for r in results if isinstance(r, BaseException)]
    assert errors == []
    assert Contact.objects.count() == 1
    assert ReviewRequest.objects.count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_with_the_advisory_locks_no_add_needs_the_constraint_backstop(
    owner, settings_row, monkeypatch
):
    """The match sees what the lock holder committed (its own snapshot, taken after the locks
    are granted), so no add inserts a duplicate that a unique constraint has to refuse and
    send round again: one match per add."""
    from reviews import db

    runs = []
    original = db.contacts_matching

    def counted(**kwargs):
        runs.append(1)
        return original(**kwargs)

    monkeypatch.setattr(db, "contacts_matching", counted)
    results = run_together(
        lambda i: contact_add(
            owner=owner,
            data=contact_input(
                owner, {"email": "jane@example.com", "mobile_phone_number": PHONE_FORMATS[i % 10]}
            ),
        )
    )
    assert_one_contact_one_request(results)
    assert len(runs) == THREADS  # one run each: no IntegrityError, no second run


def test_a_contact_due_now_kicks_the_dispatcher_on_commit_and_a_later_one_does_not(
    business, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as now_callbacks:
        contact_add(
            owner=business,
            data=contact_input(business, {"email": "a@example.com", "delay_hours": 0}),
        )
    assert dispatcher_kick in now_callbacks
    with django_capture_on_commit_callbacks() as later_callbacks:
        contact_add(
            owner=business,
            data=contact_input(business, {"email": "b@example.com", "delay_hours": 2}),
        )
    assert dispatcher_kick not in later_callbacks


def test_a_second_add_of_a_waiting_contact_says_it_still_waits(siteless):
    email_request(siteless, email="jane@example.com")
    again = contact_add(owner=siteless, data=contact_input(siteless, {"email": "jane@example.com"}))
    assert again.outcome == "already_active"
    assert Message.WAITING_FOR_REVIEW_SITE_TEXT in again.message


# --- At a location: contacts one per account, requests one per contact and location -----------

JANE = {"first_name": "Jane", "email": "jane@example.com", "mobile_phone_number": "+14155552671"}


@pytest.fixture
def account_with_two_locations():
    """A business with two locations, each listing a review site: Downtown (the default) and
    Uptown."""
    owner = UserFactory(business_name="Acme", time_zone="America/New_York")
    downtown = first_location(owner, name="Downtown")
    uptown = LocationFactory(account=owner, name="Uptown")
    for location in (downtown, uptown):
        ReviewSiteFactory(owner=owner, location=location)
    return owner, downtown, uptown


def add_at(owner, location=None, **data):
    data = data or JANE
    return contact_add(
        owner=owner,
        data=contact_input(owner, data),
        location_id=location.pk if location is not None else None,
    )


def test_a_new_request_records_its_location_the_default_when_none_is_given(
    account_with_two_locations, now
):
    owner, downtown, uptown = account_with_two_locations
    assert add_at(owner).review_request.location_id == downtown.pk
    other = add_at(owner, uptown, first_name="Bob", email="bob@example.com")
    assert other.review_request.location_id == uptown.pk
    stored = ReviewRequest.objects.get(pk=other.review_request.pk)
    assert stored.location_id == uptown.pk


def test_the_same_person_at_another_location_gets_that_locations_own_request(
    account_with_two_locations, now
):
    """Each listing is its own review: one contact, one request per location."""
    owner, downtown, uptown = account_with_two_locations
    first = add_at(owner, downtown)
    second = add_at(owner, uptown)
    assert (first.created, second.created) == (True, True)
    assert second.contact.pk == first.contact.pk and not second.contact_created
    assert second.review_request.pk != first.review_request.pk
    assert Contact.objects.filter(owner=owner).count() == 1
    again = add_at(owner, uptown)
    assert (again.created, again.outcome) == (False, ContactAddOutcome.ALREADY_ACTIVE)
    assert again.review_request.pk == second.review_request.pk


def test_the_contact_is_matched_across_locations_by_phone_too(account_with_two_locations, now):
    owner, downtown, uptown = account_with_two_locations
    add_at(owner, downtown, first_name="Jane", mobile_phone_number="+14155552671")
    at_uptown = add_at(owner, uptown, first_name="Jane", mobile_phone_number="(415) 555-2671")
    assert not at_uptown.contact_created and at_uptown.created
    assert Contact.objects.filter(owner=owner).count() == 1


def test_a_request_with_no_location_is_the_default_locations(account_with_two_locations, now):
    """Written before locations (or by the previous release): it blocks a new request at the
    default location, not at another."""
    owner, downtown, uptown = account_with_two_locations
    contact = ContactFactory(owner=owner, email="jane@example.com", phone="+14155552671")
    old = ReviewRequestFactory(contact=contact)  # location NULL
    at_default = add_at(owner, downtown)
    assert (at_default.created, at_default.review_request.pk) == (False, old.pk)
    assert add_at(owner).review_request.pk == old.pk  # no location given: the default
    assert add_at(owner, uptown).created


def test_the_cooldown_is_per_location(account_with_two_locations, time_machine):
    owner, downtown, uptown = account_with_two_locations
    time_machine.move_to(NOON_IN_NEW_YORK, tick=False)
    first = add_at(owner, downtown).review_request
    ReviewRequest.objects.filter(pk=first.pk).update(
        status="completed", sent_at=NOON_IN_NEW_YORK, ended_at=NOON_IN_NEW_YORK
    )
    time_machine.move_to(NOON_IN_NEW_YORK + timedelta(days=1), tick=False)
    cooling = add_at(owner, downtown)
    assert (cooling.outcome, cooling.review_request.pk) == (ContactAddOutcome.COOLDOWN, first.pk)
    assert add_at(owner, uptown).created


def test_an_opted_out_contact_gets_one_record_per_location(account_with_two_locations, now):
    owner, downtown, uptown = account_with_two_locations
    contact = ContactFactory(owner=owner, email="jane@example.com")
    contact.save(update_fields=contact.opt_out("email", source="staff", at=now))
    data = {"first_name": "Jane", "email": "jane@example.com"}
    at_downtown = add_at(owner, downtown, **data)
    at_uptown = add_at(owner, uptown, **data)
    assert at_downtown.outcome == at_uptown.outcome == ContactAddOutcome.OPTED_OUT
    assert at_downtown.created and at_uptown.created
    assert at_uptown.review_request.location_id == uptown.pk
    assert add_at(owner, uptown, **data).review_request.pk == at_uptown.review_request.pk


def test_a_location_of_another_account_is_refused(account_with_two_locations, now):
    owner, *_ = account_with_two_locations
    with pytest.raises(ValidationError) as error:
        add_at(owner, LocationFactory())
    assert "location_id" in error.value.message_dict
    assert not Contact.objects.filter(owner=owner).exists()


def test_a_request_waits_for_a_site_of_its_own_location(account_with_two_locations, now):
    owner, _, uptown = account_with_two_locations
    bare = LocationFactory(account=owner, name="Airport")
    waiting = add_at(owner, bare).review_request
    step0 = waiting.messages.get(step=0)
    assert (step0.status, step0.last_error_code) == ("planned", Message.WAITING_FOR_REVIEW_SITE)
    going = add_at(owner, uptown, first_name="Bob", email="bob@example.com").review_request
    assert going.messages.get(step=0).status == "pending"


def test_the_database_allows_one_active_request_per_contact_and_location(
    account_with_two_locations,
):
    owner, downtown, uptown = account_with_two_locations
    contact = ContactFactory(owner=owner)
    ReviewRequestFactory(contact=contact, location=downtown)
    ReviewRequestFactory(contact=contact, location=uptown)
    with pytest.raises(IntegrityError), transaction.atomic():
        ReviewRequestFactory(contact=contact, location=uptown)
    unplaced = ContactFactory(owner=owner)
    ReviewRequestFactory(contact=unplaced)  # no location: one such request per contact too
    with pytest.raises(IntegrityError), transaction.atomic():
        ReviewRequestFactory(contact=unplaced)


def test_a_location_costs_the_write_path_no_statement(account_with_two_locations, now):
    """The location comes with the cached settings: adding a contact at a location runs the
    statements it runs at the default."""
    owner, downtown, uptown = account_with_two_locations
    BusinessSettings.for_owner(owner)
    add_at(owner, downtown, first_name="Warm", email="warm@example.com")  # the session's prepares

    def statements(location, email) -> list[str]:
        with CaptureQueriesContext(connection) as queries:
            assert add_at(owner, location, first_name="X", email=email).created
        return [q["sql"].split(" ", 1)[0] for q in queries.captured_queries]

    assert statements(None, "a@example.com") == statements(uptown, "b@example.com")
    assert len(statements(downtown, "c@example.com")) == len(statements(None, "d@example.com"))
