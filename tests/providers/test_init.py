"""How provider answers map to the two exceptions (no SDK exception reaches the service)."""

from __future__ import annotations

import json
import smtplib
import socket
import threading
from datetime import timedelta

import pytest
import requests
from anymail.exceptions import AnymailRecipientsRefused, AnymailRequestsAPIError
from django.utils import timezone
from twilio.base.exceptions import TwilioRestException

from providers import (
    DeliveryOutcomeUnknown,
    DeliveryRejected,
    OutgoingSms,
    classify_http_status,
    request_never_left,
)
from providers.email import _anymail_error, _other_error
from providers.outbox import write_atomically
from providers.sms import OutboxSms, _rest_error, sms_channel
from tests.support.processes import free_port


def _connection_error(url: str, *, timeout: float = 1.0) -> requests.RequestException:
    try:
        requests.get(url, timeout=timeout)
    except requests.RequestException as exc:
        return exc
    raise AssertionError("expected a connection error")


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


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (429, "transient"),
        (500, "transient"),
        (503, "transient"),
        (401, "transient"),
        (400, "permanent"),
        (422, "permanent"),
        (502, "unknown"),
        (504, "unknown"),
    ],
)
def test_http_statuses_have_one_classification_for_every_provider(status, kind):
    error = classify_http_status(status, "x")
    if kind == "unknown":
        assert isinstance(error, DeliveryOutcomeUnknown)
    else:
        assert isinstance(error, DeliveryRejected) and error.permanent is (kind == "permanent")


def test_a_refused_connection_never_left_but_a_read_timeout_may_have():
    refused = _connection_error(f"http://127.0.0.1:{free_port()}/")
    assert request_never_left(refused)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    accepted = []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()
    timed_out = _connection_error(f"http://127.0.0.1:{server.getsockname()[1]}/", timeout=0.3)
    assert isinstance(timed_out, requests.ReadTimeout)
    assert not request_never_left(timed_out)
    server.close()


def test_anymail_errors_map_by_meaning():
    refused = _anymail_error(AnymailRecipientsRefused())
    assert isinstance(refused, DeliveryRejected) and refused.permanent
    response = requests.Response()
    response.status_code = 503
    assert not _anymail_error(AnymailRequestsAPIError(response=response)).permanent
    response.status_code = 422
    assert _anymail_error(AnymailRequestsAPIError(response=response)).permanent
    # anymail wraps a requests error in a dynamic subclass; the cause decides.
    cause = _connection_error(f"http://127.0.0.1:{free_port()}/")
    wrapper = type("AnymailRequestsAPIError", (AnymailRequestsAPIError, type(cause)), {})
    try:
        try:
            raise cause
        except requests.RequestException as err:
            raise wrapper("Error posting") from err
    except AnymailRequestsAPIError as exc:
        assert isinstance(_anymail_error(exc), DeliveryRejected)
    read_timeout = requests.ReadTimeout("read timed out")
    wrapper = type("AnymailRequestsAPIError", (AnymailRequestsAPIError, requests.ReadTimeout), {})
    try:
        try:
            raise read_timeout
        except requests.RequestException as err:
            raise wrapper("Error posting") from err
    except AnymailRequestsAPIError as exc:
        assert isinstance(_anymail_error(exc), DeliveryOutcomeUnknown)


def test_smtp_errors_map_by_meaning():
    refused = _other_error(smtplib.SMTPRecipientsRefused({"a@b.c": (550, b"no such user")}))
    assert isinstance(refused, DeliveryRejected) and refused.permanent
    busy = _other_error(smtplib.SMTPDataError(451, b"try later"))
    assert isinstance(busy, DeliveryRejected) and not busy.permanent
    assert not _other_error(ConnectionRefusedError()).permanent
    assert isinstance(_other_error(smtplib.SMTPServerDisconnected()), DeliveryOutcomeUnknown)
    assert isinstance(_other_error(TimeoutError()), DeliveryOutcomeUnknown)


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


def test_an_outbox_file_is_complete_or_absent(tmp_path, monkeypatch):
    target = tmp_path / "x.eml"
    write_atomically(target, b"complete")
    assert target.read_bytes() == b"complete"

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", crash)
    with pytest.raises(OSError):
        write_atomically(tmp_path / "y.eml", b"half")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.eml"]
