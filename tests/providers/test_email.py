"""How the e-mail channel maps anymail's, SMTP's and other backends' errors to the two
exceptions."""

from __future__ import annotations

import smtplib

import requests
from anymail.exceptions import AnymailRecipientsRefused, AnymailRequestsAPIError

from providers import DeliveryOutcomeUnknown, DeliveryRejected
from providers.email import _anymail_error, _other_error
from tests.support.http_errors import connection_error
from tests.support.processes import free_port


def test_anymail_errors_map_by_meaning():
    refused = _anymail_error(AnymailRecipientsRefused())
    assert isinstance(refused, DeliveryRejected) and refused.permanent
    response = requests.Response()
    response.status_code = 503
    assert not _anymail_error(AnymailRequestsAPIError(response=response)).permanent
    response.status_code = 422
    assert _anymail_error(AnymailRequestsAPIError(response=response)).permanent
    # anymail wraps a requests error in a dynamic subclass; the cause decides.
    cause = connection_error(f"http://127.0.0.1:{free_port()}/")
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
