"""Follow-ups (reviews.services.lifecycle): planned from the business policy after the previous
step was sent, inside the recipient's sending window, and stopped by a click, an opt-out, a
permanent failure or a cancel."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from reviews.models import BusinessSettings, Message, ReviewRequest
from reviews.services import (
    click_record,
    contact_email_unsubscribe,
    message_send,
    messages_dispatch_due,
    review_request_cancel,
    sms_reply_record,
    twilio_status_record,
)
from tests.support.delivery import dispatch_and_send, email_request, sms_request, step

pytestmark = pytest.mark.django_db

HUMAN = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) Safari/604.1"


def policy(owner, **values) -> BusinessSettings:
    settings_row = BusinessSettings.for_owner(owner)
    for name, value in values.items():
        setattr(settings_row, name, value)
    settings_row.save()
    return settings_row


def statuses(request: ReviewRequest) -> list[str]:
    return list(request.messages.order_by("step").values_list("status", flat=True))


def send_due_at(time_machine, moment: datetime) -> list[str]:
    time_machine.move_to(moment, tick=False)
    return dispatch_and_send()


def test_follow_ups_are_timed_from_the_first_message_and_the_last_completes(
    business, twilio, time_machine
):
    t0 = datetime(2026, 6, 10, 16, 0, tzinfo=UTC)
    time_machine.move_to(t0, tick=False)
    request = email_request(business)  # e-mail: no quiet hours by default
    assert dispatch_and_send() == ["sent"]
    assert step(request, 1).due_at == t0 + timedelta(hours=72)
    # The follow-up goes out two hours late: the next one still counts from the first message.
    assert send_due_at(time_machine, t0 + timedelta(hours=74)) == ["sent"]
    assert step(request, 2).due_at == t0 + timedelta(hours=168)
    assert send_due_at(time_machine, t0 + timedelta(hours=168)) == ["sent"]
    request.refresh_from_db()
    assert (request.status, request.ended_reason) == ("completed", "sequence_finished")
    assert request.completed_at == t0 + timedelta(hours=168)
    assert statuses(request) == ["sent", "sent", "sent"]


@pytest.mark.parametrize(
    ("phone", "sent_at", "due_at"),
    [
        # San Francisco: 20:30 PDT + 30 h = 02:30 PDT, moved to 08:00 PDT (15:00 UTC).
        (
            "+14155552671",
            datetime(2026, 6, 11, 3, 30, tzinfo=UTC),
            datetime(2026, 6, 12, 15, 0, tzinfo=UTC),
        ),
        # London: 20:00 BST + 30 h = 02:00 BST, moved to 08:00 BST (07:00 UTC).
        (
            "+442079460958",
            datetime(2026, 6, 10, 19, 0, tzinfo=UTC),
            datetime(2026, 6, 12, 7, 0, tzinfo=UTC),
        ),
        # Across the end of US daylight time: 08:00 PDT + 30 h = 13:00 PST, allowed as is.
        (
            "+14155552671",
            datetime(2026, 10, 31, 15, 0, tzinfo=UTC),
            datetime(2026, 11, 1, 21, 0, tzinfo=UTC),
        ),
        # 20:00 PDT on Oct 31 + 30 h = 01:00 PST on Nov 2, moved to 08:00 PST (16:00 UTC).
        (
            "+14155552671",
            datetime(2026, 11, 1, 3, 0, tzinfo=UTC),
            datetime(2026, 11, 2, 16, 0, tzinfo=UTC),
        ),
    ],
)
def test_sms_follow_ups_land_inside_the_recipients_window(
    business, twilio, time_machine, phone, sent_at, due_at
):
    policy(
        business,
        send_window_applies_to=BusinessSettings.WindowAppliesTo.SMS,
        follow_up_offsets_hours=[30],
    )
    time_machine.move_to(sent_at, tick=False)
    request = sms_request(business, phone=phone)
    assert step(request, 0).due_at == sent_at  # inside the window: not moved
    assert dispatch_and_send() == ["sent"]
    assert step(request, 1).due_at == due_at


def test_email_follow_ups_ignore_quiet_hours_unless_the_business_applies_them(
    business, time_machine
):
    t0 = datetime(2026, 6, 10, 20, 0, tzinfo=UTC)  # 16:00 in New York
    time_machine.move_to(t0, tick=False)
    policy(business, send_window_applies_to="sms", follow_up_offsets_hours=[8])
    request = email_request(business)
    dispatch_and_send()
    assert step(request, 1).due_at == t0 + timedelta(hours=8)  # 00:00 in New York
    policy(business, send_window_applies_to="all")
    other = email_request(business)
    dispatch_and_send()
    # No phone: the business's own zone decides, 08:00 New York = 12:00 UTC.
    assert step(other, 1).due_at == datetime(2026, 6, 11, 12, 0, tzinfo=UTC)


def _sent_with_follow_up_pending(owner, **data) -> ReviewRequest:
    request = email_request(owner, **data)
    assert dispatch_and_send() == ["sent"]
    assert statuses(request) == ["sent", "pending", "planned"]
    return request


def test_a_human_click_stops_the_follow_ups(business, time_machine):
    request = _sent_with_follow_up_pending(business)
    time_machine.move_to(timezone.now() + timedelta(minutes=5))
    site = business.review_sites.first()
    outcome = click_record(
        review_request=request, site=site, method="GET", user_agent=HUMAN, ip="203.0.113.9"
    )
    assert outcome.counted and outcome.url == site.url
    request.refresh_from_db()
    assert (request.status, request.ended_reason) == ("clicked", "clicked")
    assert statuses(request) == ["sent", "cancelled", "cancelled"]
    Message.objects.filter(review_request=request).update(due_at=timezone.now())
    assert dispatch_and_send() == []


def test_a_scanner_click_does_not_stop_the_follow_ups(business, time_machine):
    request = _sent_with_follow_up_pending(business)
    site = business.review_sites.first()
    too_soon = click_record(
        review_request=request, site=site, method="GET", user_agent=HUMAN, ip=""
    )
    assert not too_soon.counted and too_soon.ignored_reason == "too_soon_after_send"
    time_machine.move_to(timezone.now() + timedelta(minutes=5))
    scanner = click_record(
        review_request=request, site=site, method="GET", user_agent="Mimecast", ip=""
    )
    assert not scanner.counted
    request.refresh_from_db()
    assert request.status == "sent" and request.clicks.count() == 2
    assert statuses(request) == ["sent", "pending", "planned"]


def test_an_sms_opt_out_stops_sms_follow_ups_and_ends_an_sms_only_request(business, twilio):
    policy(business, follow_up_offsets_hours=[72])
    request = sms_request(business)
    dispatch_and_send()
    assert statuses(request) == ["sent", "pending"]
    sms_reply_record(from_number=request.contact.phone, body="stop texting me", message_sid="SM1")
    request.refresh_from_db()
    assert (request.status, request.ended_reason) == ("opted_out", "opted_out")
    assert statuses(request) == ["sent", "cancelled"]


def test_an_sms_opt_out_leaves_e_mail_follow_ups_of_a_contact_with_both(business, twilio):
    request = sms_request(business, email="both@example.com")
    dispatch_and_send()
    assert [m.channel for m in request.messages.order_by("step")] == ["sms", "email", "email"]
    sms_reply_record(from_number=request.contact.phone, body="STOP", message_sid="SM2")
    request.refresh_from_db()
    assert request.status == "sent"
    assert statuses(request) == ["sent", "pending", "planned"]


def test_an_opt_out_before_anything_was_sent_ends_the_request(business):
    request = email_request(business)
    contact_email_unsubscribe(token=request.token)
    request.refresh_from_db()
    assert request.status == "opted_out"
    assert statuses(request) == ["cancelled", "cancelled", "cancelled"]
    assert dispatch_and_send() == []


def test_a_permanent_failure_of_a_follow_up_ends_the_request(business, postmark, time_machine):
    request = _sent_with_follow_up_pending(business)
    postmark.script("postmark", "406")
    time_machine.move_to(step(request, 1).due_at, tick=False)
    assert dispatch_and_send() == ["failed"]
    request.refresh_from_db()
    assert (request.status, request.ended_reason) == ("failed", "delivery_failed")
    assert statuses(request) == ["sent", "failed", "cancelled"]


def test_a_permanent_sms_failure_moves_on_to_an_e_mail_follow_up(business, twilio, time_machine):
    policy(business, follow_up_other_channel=False, follow_up_offsets_hours=[24, 48])
    request = sms_request(business, email="both@example.com")
    dispatch_and_send()
    Message.objects.filter(review_request=request, step=2).update(channel="email")
    twilio.script("twilio", "21614")
    time_machine.move_to(step(request, 1).due_at, tick=False)
    assert dispatch_and_send() == ["failed"]
    request.refresh_from_db()
    assert request.status == "sent"
    assert statuses(request) == ["sent", "failed", "pending"]  # the e-mail step is next


def test_cancel_stops_everything_not_yet_sent(business):
    request = _sent_with_follow_up_pending(business)
    review_request_cancel(review_request=request, detail="order refunded")
    request.refresh_from_db()
    assert (request.status, request.ended_detail) == ("cancelled", "order refunded")
    assert statuses(request) == ["sent", "cancelled", "cancelled"]


def test_follow_ups_wait_for_an_unknown_first_message_and_follow_its_reconciliation(
    business, twilio
):
    twilio.script("twilio", "hang")
    request = sms_request(business)
    assert dispatch_and_send() == ["unknown"]
    first = step(request, 0)
    assert statuses(request)[1:] == ["planned", "planned"]
    sid = twilio.twilio_messages()[0]["sid"]
    result = twilio_status_record(message_id=str(first.pk), sid=sid, status="delivered")
    assert result == "delivered"
    first.refresh_from_db()
    assert (first.status, first.provider_message_id) == ("delivered", sid)
    assert first.sent_at == first.sending_at  # it went out when the send was attempted
    request.refresh_from_db()
    assert request.status == "delivered"
    assert step(request, 1).due_at == first.sending_at + timedelta(hours=72)


def test_a_redelivered_send_task_never_plans_a_follow_up_twice(business, twilio):
    request = sms_request(business)
    (message_id,) = messages_dispatch_due().claimed
    message_send(message_id=message_id)
    message_send(message_id=message_id)
    assert statuses(request) == ["sent", "pending", "planned"]


def test_a_click_while_the_first_message_is_unknown_proves_it_arrived(business, twilio):
    twilio.script("twilio", "hang")
    request = sms_request(business)
    dispatch_and_send()
    first = step(request, 0)
    Message.objects.filter(pk=first.pk).update(sending_at=timezone.now() - timedelta(minutes=5))
    outcome = click_record(
        review_request=request,
        site=business.review_sites.first(),
        method="GET",
        user_agent=HUMAN,
        ip="",
    )
    assert outcome.counted
    request.refresh_from_db()
    assert request.status == "clicked" and request.sent_at is not None
    assert statuses(request) == ["unknown", "cancelled", "cancelled"]
    # Reconciled later: the message is sent, and nothing more goes out.
    sid = twilio.twilio_messages()[0]["sid"]
    twilio_status_record(message_id=str(first.pk), sid=sid, status="delivered")
    request.refresh_from_db()
    assert request.status == "clicked"
    assert statuses(request) == ["delivered", "cancelled", "cancelled"]
