"""Helpers of the delivery commands' tests: a command's output, and an SMS whose outcome is unknown
(the provider took the call and never answered)."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command

from reviews.models import Message
from tests.support.delivery import dispatch_and_send, sms_request, step


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=out)
    return out.getvalue()


def _unknown_sms(business, twilio) -> Message:
    twilio.script("twilio", "hang")
    request = sms_request(business)
    dispatch_and_send()
    message = step(request, 0)
    assert message.status == "unknown"
    return message
