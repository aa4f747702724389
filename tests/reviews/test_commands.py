"""dispatch_due, resend_message and messages_reconcile_unknown: commands over the same services."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from reviews import tasks
from reviews.models import Message, ReviewRequest
from reviews.services import messages_dispatch_due
from tests.support.delivery import dispatch_and_send, email_request, sms_request, step

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=out)
    return out.getvalue()


def test_dispatch_due_dry_run_lists_due_rows_and_claims_nothing(business):
    request = email_request(business)
    out = run("dispatch_due", "--dry-run")
    assert "1 due message(s) would be claimed" in out
    assert str(step(request, 0).pk) in out
    assert step(request, 0).status == "pending"


def test_dispatch_due_claims(business, monkeypatch):
    monkeypatch.setattr(tasks.send_messages_task, "delay", lambda message_ids: None)
    email_request(business)
    assert "claimed 1" in run("dispatch_due")
    assert Message.objects.filter(status="queued").count() == 1


def _unknown_sms(business, twilio) -> Message:
    twilio.script("twilio", "hang")
    request = sms_request(business)
    dispatch_and_send()
    message = step(request, 0)
    assert message.status == "unknown"
    return message


def test_resend_refuses_an_unknown_sms_without_force_and_warns_with_it(business, twilio):
    message = _unknown_sms(business, twilio)
    with pytest.raises(CommandError, match="may already have been delivered"):
        run("resend_message", str(message.pk))
    out = run("resend_message", str(message.pk), "--force")
    assert "Warning: this SMS may already have been delivered" in out
    message.refresh_from_db()
    assert (message.status, message.attempts) == ("pending", 0)
    assert dispatch_and_send() == ["sent"]  # through the same dispatch and claim path
    assert twilio.count(str(message.pk)) == 2  # the documented risk of --force


def test_resend_reopens_a_failed_request_and_sends_through_the_claim_path(business, twilio):
    twilio.script("twilio", "21211")
    request = sms_request(business)
    dispatch_and_send()
    assert ReviewRequest.objects.get(pk=request.pk).status == "failed"
    run("resend_message", str(step(request, 0).pk))
    request.refresh_from_db()
    assert (request.status, request.ended_at) == ("scheduled", None)
    assert dispatch_and_send() == ["sent"]
    request.refresh_from_db()
    assert request.status == "completed"  # its follow-ups were cancelled when it failed


@pytest.mark.parametrize("status", ["sent", "pending", "planned", "cancelled"])
def test_resend_refuses_rows_that_are_not_failed_or_unknown(business, status):
    request = email_request(business)
    message = step(request, 0)
    Message.objects.filter(pk=message.pk).update(status=status)
    with pytest.raises(CommandError, match="Only failed or unknown"):
        run("resend_message", str(message.pk))


def test_resend_refuses_an_opted_out_contact_and_an_unknown_id(business, twilio):
    twilio.script("twilio", "21211")
    request = sms_request(business)
    dispatch_and_send()
    request.contact.sms_opted_out_at = timezone.now()
    request.contact.save()
    with pytest.raises(CommandError, match="cannot receive"):
        run("resend_message", str(step(request, 0).pk))
    with pytest.raises(CommandError, match="No message"):
        run("resend_message", "00000000-0000-4000-8000-000000000000")
    with pytest.raises(CommandError, match="No message"):
        run("resend_message", "not-a-uuid")


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
