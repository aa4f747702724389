"""Row rules of review requests and messages (reviews.models.requests), enforced by the database
and the models."""

from __future__ import annotations

from datetime import timedelta

import pytest

from reviews.models import (
    InvalidTransition,
    Message,
    ReviewRequest,
)
from tests.factories import ContactFactory, ReviewRequestFactory
from tests.reviews.models.conftest import AT, _integrity_error

pytestmark = pytest.mark.django_db


# --- review requests ------------------------------------------------------------------------------


def test_active_statuses_match_the_one_active_request_constraint():
    constraint = next(
        c
        for c in ReviewRequest._meta.constraints
        if c.name == "reviews_request_one_active_per_contact_location"
    )
    assert set(dict(constraint.condition.children)["status__in"]) == set(
        ReviewRequest.ACTIVE_STATUSES
    )
    assert set(ReviewRequest.Status) == ReviewRequest.ACTIVE_STATUSES | ReviewRequest.ENDED_STATUSES


@pytest.mark.parametrize("active", sorted(ReviewRequest.ACTIVE_STATUSES))
def test_database_refuses_a_second_active_request_for_one_contact(owner, active):
    contact = ContactFactory(owner=owner)
    ReviewRequestFactory(contact=contact, status=active)
    _integrity_error(lambda: ReviewRequestFactory(contact=contact))


def test_ended_requests_do_not_block_a_new_active_one(owner):
    contact = ContactFactory(owner=owner)
    for status in ReviewRequest.ENDED_STATUSES:
        ReviewRequestFactory(contact=contact, status=status, ended_at=AT)
    ReviewRequestFactory(contact=contact)
    assert contact.review_requests.count() == len(ReviewRequest.ENDED_STATUSES) + 1


def test_database_refuses_an_ended_request_without_ended_at(owner):
    _integrity_error(lambda: ReviewRequestFactory(status=ReviewRequest.Status.CANCELLED))


def test_database_refuses_two_requests_with_one_public_token(owner):
    first = ReviewRequestFactory(contact=ContactFactory(owner=owner))
    _integrity_error(
        lambda: ReviewRequestFactory(contact=ContactFactory(owner=owner), token=first.token)
    )


def test_transition_stamps_each_status_the_first_time_and_the_end():
    request = ReviewRequest(status=ReviewRequest.Status.SCHEDULED)
    request.transition("sending", at=AT)
    request.transition("sent", at=AT + timedelta(seconds=5))
    request.transition("delivered", at=AT + timedelta(seconds=9))
    fields = request.transition("clicked", at=AT + timedelta(days=1), reason="clicked")
    assert "ended_at" in fields and "clicked_at" in fields
    request.transition("completed", at=AT + timedelta(days=2), reason="sequence_finished")
    assert (request.sending_at, request.sent_at, request.delivered_at) == (
        AT,
        AT + timedelta(seconds=5),
        AT + timedelta(seconds=9),
    )
    assert request.clicked_at == request.ended_at == AT + timedelta(days=1)
    assert request.ended_reason == "clicked"  # the first ending explains it
    assert request.completed_at == AT + timedelta(days=2)


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("cancelled", "scheduled"),
        ("completed", "sent"),
        ("failed", "sending"),
        ("opted_out", "scheduled"),
        ("scheduled", "clicked"),
        ("delivered", "sending"),
    ],
)
def test_invalid_request_transitions_are_refused(source, target):
    with pytest.raises(InvalidTransition):
        ReviewRequest(status=source).transition(target, at=AT)


def test_sources_lists_where_a_conditional_update_may_come_from():
    assert ReviewRequest.sources("clicked") == {"sent", "delivered"}
    assert Message.sources("sending") == {"queued"}
    # ...plus sending: a send task cancels the row it claimed when the contact opted out
    # before the provider call (nothing was handed over).
    assert Message.sources("cancelled") == Message.CANCELLABLE_STATUSES | {"sending"}


def test_cancel_open_messages_is_one_update_that_spares_messages_already_handed_over(
    owner, django_assert_num_queries
):
    request = ReviewRequestFactory(contact=ContactFactory(owner=owner))
    statuses = ["sent", "queued", "pending", "planned", "unknown"]
    for step, status in enumerate(statuses):
        Message.objects.create(
            review_request=request, step=step, channel="email", status=status, due_at=AT
        )
    with django_assert_num_queries(1):
        assert request.cancel_open_messages(at=AT) == 3
    assert dict(request.messages.values_list("step", "status")) == {
        0: "sent",
        1: "cancelled",
        2: "cancelled",
        3: "cancelled",
        4: "unknown",
    }
    assert request.messages.filter(status="cancelled", cancelled_at=AT).count() == 3


def test_cooldown_starts_only_from_a_request_that_reached_the_contact():
    cooldown = timedelta(days=90)
    active = ReviewRequest(status="scheduled")
    assert active.blocks_new_request(now=AT, cooldown=cooldown)
    never_sent = ReviewRequest(status="cancelled", ended_at=AT)
    assert never_sent.cooldown_ends_at(cooldown) is None
    assert not never_sent.blocks_new_request(now=AT, cooldown=cooldown)
    sent = ReviewRequest(status="clicked", sent_at=AT, ended_at=AT)
    assert sent.cooldown_ends_at(cooldown) == AT + cooldown
    assert sent.blocks_new_request(now=AT + cooldown - timedelta(seconds=1), cooldown=cooldown)
    assert not sent.blocks_new_request(now=AT + cooldown, cooldown=cooldown)


# --- messages -------------------------------------------------------------------------------------


def test_database_refuses_a_pending_message_without_due_at(owner):
    request = ReviewRequestFactory(contact=ContactFactory(owner=owner))
    _integrity_error(
        lambda: Message.objects.create(
            review_request=request, step=0, channel="sms", status="pending"
        )
    )


def test_database_refuses_two_messages_for_one_step(owner):
    request = ReviewRequestFactory(contact=ContactFactory(owner=owner))
    Message.objects.create(review_request=request, step=1, channel="sms", status="planned")
    _integrity_error(
        lambda: Message.objects.create(
            review_request=request, step=1, channel="email", status="planned"
        )
    )


def test_message_transitions_follow_the_claim_before_send_lifecycle():
    message = Message(status="pending")
    message.transition("queued", at=AT)
    message.transition("sending", at=AT + timedelta(seconds=1))
    message.transition("unknown", at=AT + timedelta(seconds=31))
    message.transition("sent", at=AT + timedelta(minutes=5))
    assert message.queued_at == AT and message.unknown_at == AT + timedelta(seconds=31)
    with pytest.raises(InvalidTransition):
        Message(status="sent").transition("sending", at=AT)  # never send a row twice
    with pytest.raises(InvalidTransition):
        Message(status="cancelled").transition("pending", at=AT)
