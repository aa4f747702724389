"""Staff actions on requests (reviews.services.staff): cancel and send now keep every delivery
rule."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

import pytest
from django.utils import timezone

from reviews.models import BusinessSettings, Message, ReviewRequest
from reviews.services import (
    CancelRefused,
    SendNowRefused,
    message_send,
    messages_dispatch_due,
    review_request_cancel,
    review_request_send_now,
)
from tests.reviews.admin import conftest as back_office
from tests.support.delivery import dispatch_and_send, email_request
from tests.support.portal_data import add_request

pytestmark = pytest.mark.django_db

# The back office tests' business (one review site, no postal address), which these tests were
# written with beside the admin's actions, in place of the suite's.
business = back_office.business


def test_send_now_makes_a_delayed_first_message_due_and_it_goes_out(business):
    request = add_request(business, email="jane@example.com", delay_hours=48)
    assert dispatch_and_send() == []
    message = review_request_send_now(review_request=request)
    assert message.step == 0 and message.due_at <= timezone.now()
    request.refresh_from_db()
    assert request.scheduled_for <= timezone.now()
    assert dispatch_and_send() == ["sent"]
    request.refresh_from_db()
    assert request.status == ReviewRequest.Status.SENT


def test_send_now_brings_the_next_follow_up_forward(business):
    request = add_request(business, email="jane@example.com", delay_hours=0)
    assert dispatch_and_send() == ["sent"]
    follow_up = request.messages.get(step=1)
    assert follow_up.status == Message.Status.PENDING and follow_up.due_at > timezone.now()
    assert review_request_send_now(review_request=request).pk == follow_up.pk
    assert dispatch_and_send() == ["sent"]


def test_send_now_refuses_when_nothing_is_waiting(business):
    request = add_request(business, email="jane@example.com", delay_hours=0)
    messages_dispatch_due()  # the first message is queued for a worker
    with pytest.raises(SendNowRefused, match="already on its way"):
        review_request_send_now(review_request=request)


def test_send_now_refuses_an_opted_out_contact(business):
    request = add_request(business, email="jane@example.com", delay_hours=24)
    request.contact.email_opted_out_at = timezone.now()
    request.contact.save()
    with pytest.raises(SendNowRefused, match="opted out of e-mail"):
        review_request_send_now(review_request=request)
    assert request.messages.get(step=0).due_at > timezone.now()


def test_send_now_refuses_an_ended_request(business):
    request = add_request(business, email="jane@example.com", delay_hours=24)
    review_request_cancel(review_request=request)
    with pytest.raises(SendNowRefused, match="ended"):
        review_request_send_now(review_request=request)


def test_send_now_never_overrides_quiet_hours(business, time_machine):
    BusinessSettings.objects.filter(owner=business).update(
        send_window_applies_to=BusinessSettings.WindowAppliesTo.SMS,
        send_window_start=time(8),
        send_window_end=time(21),
    )
    # 14:00 in San Francisco: an SMS may go; the contact wants it in 2 days.
    time_machine.move_to(datetime(2025, 3, 4, 22, 0, tzinfo=UTC), tick=False)
    request = add_request(business, mobile_phone_number="+14155552671", delay_hours=48)
    # 23:30 in San Francisco: quiet hours.
    time_machine.move_to(datetime(2025, 3, 5, 7, 30, tzinfo=UTC), tick=False)
    with pytest.raises(SendNowRefused, match=r"Quiet hours.*America/Los_Angeles.*16:00 UTC"):
        review_request_send_now(review_request=request)
    time_machine.move_to(datetime(2025, 3, 5, 17, 0, tzinfo=UTC), tick=False)
    assert review_request_send_now(review_request=request).due_at == timezone.now()


def test_cancel_ends_the_request_and_cancels_every_unsent_message(business):
    request = add_request(business, email="jane@example.com", delay_hours=0)
    messages_dispatch_due()  # step 0 queued: the send task has not claimed it yet
    review_request_cancel(review_request=request, detail="by staff")
    request.refresh_from_db()
    assert request.status == ReviewRequest.Status.CANCELLED
    assert set(request.messages.values_list("status", flat=True)) == {Message.Status.CANCELLED}
    # The queued task runs late: its claim finds nothing and sends nothing.
    assert message_send(message_id=str(request.messages.get(step=0).pk)) == "skipped"


def test_cancel_is_idempotent(business):
    request = add_request(business, email="jane@example.com", delay_hours=1)
    first = review_request_cancel(review_request=request)
    ended_at = first.ended_at
    again = review_request_cancel(review_request=request)
    assert again.status == ReviewRequest.Status.CANCELLED and again.ended_at == ended_at
    assert timedelta(0) <= timezone.now() - ended_at


def test_cancel_refuses_an_ended_request_when_asked_to_and_changes_nothing(business):
    request = add_request(business, email="jane@example.com", delay_hours=1)
    first = review_request_cancel(review_request=request)
    with pytest.raises(CancelRefused, match=r"already ended \(cancelled on .* UTC\)"):
        review_request_cancel(review_request=request, refuse_ended=True)
    request.refresh_from_db()
    assert (request.status, request.ended_at) == (first.status, first.ended_at)


def test_send_now_says_the_request_waits_for_a_review_site(siteless):
    request = email_request(siteless)
    with pytest.raises(SendNowRefused, match="Waiting for a review site"):
        review_request_send_now(review_request=request)
