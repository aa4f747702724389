"""manage.py reconcile_unknown: what happened to messages whose outcome is unknown, asked of the
provider (or read from the outbox)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from reviews.models import Message
from reviews.services import messages_dispatch_due
from tests.reviews.management.commands.conftest import _unknown_sms, run
from tests.support.delivery import dispatch_and_send, email_request, sms_request, step

pytestmark = pytest.mark.django_db


def test_reconcile_finds_an_unknown_sms_at_twilio_and_marks_it_sent(business, twilio):
    message = _unknown_sms(business, twilio)
    out = run("reconcile_unknown", "--older-than-minutes", "0")
    assert str(message.pk) in out and "sent" in out
    message.refresh_from_db()
    assert message.status == "sent"
    assert message.provider_message_id == twilio.twilio_messages()[0]["sid"]
    assert step(message.review_request, 1).status == "pending"


def test_reconcile_fails_an_unknown_sms_twilio_never_received(business, twilio):
    request = sms_request(business)
    (message_id,) = messages_dispatch_due().claimed
    # The worker died after claiming, before calling Twilio: the lease made it unknown.
    Message.objects.filter(pk=message_id).update(
        status="unknown",
        unknown_at=timezone.now() - timedelta(minutes=30),
        attempts=1,
        to_address=request.contact.phone,
    )
    out = run("reconcile_unknown")
    assert "failed" in out and "no record" in out
    message = Message.objects.get(pk=message_id)
    assert (message.status, message.last_error_code) == ("failed", "not_at_provider")
    run("resend_message", message_id)  # no --force needed: it was never sent
    assert dispatch_and_send() == ["sent"]
    assert twilio.count(message_id) == 1


def test_reconcile_gives_up_on_esp_email_only_after_the_max_age(business, postmark):
    postmark.script("postmark", "hang")
    request = email_request(business)
    dispatch_and_send()
    message = step(request, 0)
    Message.objects.filter(pk=message.pk).update(unknown_at=timezone.now() - timedelta(hours=1))
    assert "still_unknown" in run("reconcile_unknown", "--older-than-minutes", "0")
    Message.objects.filter(pk=message.pk).update(unknown_at=timezone.now() - timedelta(hours=49))
    assert "failed" in run("reconcile_unknown")
    message.refresh_from_db()
    assert (message.status, message.last_error_code) == ("failed", "unknown_expired")


def test_reconcile_reads_the_outbox_for_unknown_outbox_messages(business, outbox_email):
    request = email_request(business)
    dispatch_and_send()
    message = step(request, 0)
    Message.objects.filter(pk=message.pk).update(
        status="unknown", unknown_at=timezone.now() - timedelta(hours=1), provider_message_id=""
    )
    run("reconcile_unknown")
    message.refresh_from_db()
    assert message.status == "sent"


def test_reconcile_with_nothing_to_do_says_so(db):
    assert "no unknown messages" in run("reconcile_unknown")
