"""How the SMS channel maps Twilio's answers and transport errors to the two exceptions, and
its outbox without Twilio credentials."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import urllib3
from django.utils import timezone
from twilio.base.exceptions import TwilioRestException

from providers import DeliveryOutcomeUnknown, DeliveryRejected, OutgoingSms
from providers.sms import OutboxSms, _rest_error, _transport_error, sms_channel


@pytest.mark.parametrize(
    ("status", "code", "kind", "permanent"),
    [
        (400, 21211, DeliveryRejected, True),
        (400, 21610, DeliveryRejected, True),
        (400, 21614, DeliveryRejected, True),
        (400, 30007, DeliveryRejected, True),
        (400, 21606, DeliveryRejected, False),  # our from-number: configuration
        (401, 20003, DeliveryRejected, False),  # our credentials: configuration
        (429, 20429, DeliveryRejected, False),
        (500, 20500, DeliveryRejected, False),
        (503, 20503, DeliveryRejected, False),
        (502, None, DeliveryOutcomeUnknown, None),
        (504, None, DeliveryOutcomeUnknown, None),
        (400, 21999, DeliveryRejected, True),  # any other refusal of this message
    ],
)
def test_twilio_errors_map_to_permanent_transient_or_unknown(status, code, kind, permanent):
    error = _rest_error(TwilioRestException(status, "https://api.twilio.com/x", "msg", code))
    assert isinstance(error, kind)
    if permanent is not None:
        assert error.permanent is permanent
        assert error.code == str(code)


def test_without_twilio_credentials_sms_are_json_files_in_the_outbox(settings, tmp_path):
    settings.OUTBOX_DIR = tmp_path
    settings.TWILIO_ACCOUNT_SID = settings.TWILIO_AUTH_TOKEN = ""
    channel = sms_channel()
    assert isinstance(channel, OutboxSms)
    sent = channel.send(OutgoingSms("m-1", "+14155552671", "Hi", "https://x/cb/m-1/"))
    assert sent.provider_message_id == "outbox:m-1"
    record = json.loads((tmp_path / "m-1.json").read_text())
    assert {k: record[k] for k in ("to", "body", "message_id", "status_callback")} == {
        "to": "+14155552671",
        "body": "Hi",
        "message_id": "m-1",
        "status_callback": "https://x/cb/m-1/",
    }
    assert [p.name for p in tmp_path.iterdir()] == ["m-1.json"]  # no temporary file left
    found = channel.find(message_id="m-1", to="", marker="", since=timezone.now() - timedelta(1))
    assert found.provider_message_id == "outbox:m-1"


def test_a_read_timeout_from_urllib3_is_an_unknown_outcome_named_as_such():
    error = _transport_error(urllib3.exceptions.ReadTimeoutError(None, "/x", "timed out"))
    assert isinstance(error, DeliveryOutcomeUnknown)
    assert "read timeout" in str(error)
