"""manage.py resend_message: failed or unknown messages sent again through the claim path, and
everything it refuses."""

from __future__ import annotations

import pytest
from django.core.management import CommandError
from django.utils import timezone

from reviews.models import Message, ReviewRequest
from tests.reviews.management.commands.conftest import _unknown_sms, run
from tests.support.delivery import dispatch_and_send, email_request, sms_request, step

pytestmark = pytest.mark.django_db


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
