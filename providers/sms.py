"""SMS: Twilio's REST client when ``TWILIO_ACCOUNT_SID`` and ``TWILIO_AUTH_TOKEN`` are set, else
one JSON file per message in ``OUTBOX_DIR``.

Twilio's Messages API has no idempotency key, so a message is sent at most once: the caller
claims its row before calling ``send`` and never calls it again after ``DeliveryOutcomeUnknown``.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from functools import lru_cache

import urllib3
from django.conf import settings
from django.utils import timezone
from twilio.base.exceptions import TwilioException, TwilioRestException
from twilio.rest import Client

from . import (
    DeliveryOutcomeUnknown,
    DeliveryRejected,
    OutgoingSms,
    ProviderRecord,
    Sent,
    classify_http_status,
    is_http_error,
    request_never_left,
)
from .outbox import sms_path, write_atomically
from .twilio_http import PooledHttpClient

logger = logging.getLogger(__name__)

# Twilio error codes that mean "never for this recipient or this message" (400-class answers
# to the create call). https://www.twilio.com/docs/api/errors
PERMANENT_CODES = frozenset(
    {
        21211,  # invalid 'To' phone number
        21265,  # 'To' number cannot be a short code
        21408,  # permission to send to this region is not enabled
        21602,  # message body is required
        21604,  # 'To' phone number is required
        21610,  # the recipient replied STOP: unsubscribed
        21612,  # the 'To' number is not reachable via this route
        21614,  # 'To' number is not a valid mobile number (a landline)
        21617,  # body exceeds 1600 characters
        21635,  # 'To' number cannot be reached (not SMS-capable)
        30003,  # unreachable destination handset
        30004,  # message blocked
        30005,  # unknown destination handset
        30006,  # landline or unreachable carrier
        30007,  # filtered as spam by the carrier
        30008,  # unknown error reported by the carrier
    }
)
UNSUBSCRIBED_CODE = 21610
# Codes about our own account or sender configuration: fixing the settings makes a retry work.
CONFIGURATION_CODES = frozenset({20003, 20404, 21606, 21659, 21703, 21704, 21705})


def twilio_configured() -> bool:
    return bool(settings.TWILIO_ACCOUNT_SID and settings.TWILIO_AUTH_TOKEN)


def sms_channel() -> TwilioSms | OutboxSms:
    """The SMS adapter the settings select (one switch: the Twilio credentials)."""
    return TwilioSms() if twilio_configured() else OutboxSms()


def sender() -> str:
    return settings.TWILIO_FROM_NUMBER or settings.TWILIO_MESSAGING_SERVICE_SID


class OutboxSms:
    provider = "outbox"

    def send(self, sms: OutgoingSms) -> Sent:
        record = {
            "to": sms.to,
            "from": sender() or "outbox",
            "body": sms.body,
            "message_id": sms.message_id,
            "status_callback": sms.status_callback,
            "created_at": timezone.now().isoformat(),
        }
        try:
            write_atomically(
                sms_path(sms.message_id),
                json.dumps(record, ensure_ascii=False, indent=2).encode(),
            )
        except OSError as exc:  # the rename is the "send": it either happened or not
            raise DeliveryRejected(f"outbox not writable: {exc}", permanent=False) from exc
        return Sent(self.provider, f"outbox:{sms.message_id}")

    def find(
        self, *, message_id: str, to: str, marker: str, since: datetime
    ) -> ProviderRecord | None:
        """The outbox file of a message, if it was written."""
        if sms_path(message_id).exists():
            return ProviderRecord(f"outbox:{message_id}", "sent")
        return None


class TwilioSms:
    provider = "twilio"

    def __init__(self) -> None:
        self.client = _client(
            settings.TWILIO_ACCOUNT_SID,
            settings.TWILIO_AUTH_TOKEN,
            settings.TWILIO_API_BASE_URL,
            settings.DELIVERY_CONNECT_TIMEOUT,
            settings.DELIVERY_READ_TIMEOUT,
        )

    def send(self, sms: OutgoingSms) -> Sent:
        params = {"to": sms.to, "body": sms.body, "status_callback": sms.status_callback}
        if settings.TWILIO_MESSAGING_SERVICE_SID:
            params["messaging_service_sid"] = settings.TWILIO_MESSAGING_SERVICE_SID
        else:
            params["from_"] = settings.TWILIO_FROM_NUMBER
        try:
            created = self.client.messages.create(**params)
        except TwilioRestException as exc:
            raise _rest_error(exc) from exc
        except Exception as exc:
            raise _transport_error(exc) from exc
        if not created.sid:
            raise DeliveryOutcomeUnknown("Twilio answered without a message SID")
        return Sent(self.provider, created.sid)

    def find(
        self, *, message_id: str, to: str, marker: str, since: datetime
    ) -> ProviderRecord | None:
        """Twilio's record of a message we may have sent: the newest message to ``to`` since
        ``since`` whose body contains ``marker`` (the request's unique review-link path)."""
        try:
            found = self.client.messages.list(to=to, date_sent_after=since, limit=50)
        except TwilioRestException as exc:
            raise _rest_error(exc) from exc
        except Exception as exc:
            raise _transport_error(exc) from exc
        for item in found:
            if item.date_created is not None and item.date_created < since:
                continue  # Twilio filters by day only; an earlier step has the same link
            if marker and marker in (item.body or ""):
                return ProviderRecord(item.sid, str(item.status or ""), str(item.error_code or ""))
        return None

    def fetch(self, sid: str) -> ProviderRecord | None:
        try:
            item = self.client.messages(sid).fetch()
        except TwilioRestException as exc:
            if exc.status == 404:
                return None
            raise _rest_error(exc) from exc
        except Exception as exc:
            raise _transport_error(exc) from exc
        return ProviderRecord(item.sid, str(item.status or ""), str(item.error_code or ""))


# Connections kept per host; above the largest worker concurrency we run (bench: 24 threads).
HTTP_POOL_SIZE = 32


@lru_cache(maxsize=4)
def _client(
    account_sid: str, auth_token: str, base_url: str, connect_timeout: float, read_timeout: float
) -> Client:
    """One client per process and configuration, so its HTTP connections are reused.

    Its transport is ``PooledHttpClient`` (``twilio_http.py``): the SDK's own requests-based
    client cost most of a send's CPU in the SDK; this one sends the same request through a
    urllib3 pool of up to ``HTTP_POOL_SIZE`` connections per host (twilio's default, cores + 4,
    is below a threaded worker's concurrency), never retried, with the environment's proxy and
    CA bundle read once.
    """
    http = PooledHttpClient(
        base_url=base_url,
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        pool_size=HTTP_POOL_SIZE,
    )
    client = Client(account_sid, auth_token, http_client=http)
    client.api.base_url = base_url.rstrip("/")  # a fake Twilio on loopback in tests/benchmarks
    return client


def _rest_error(exc: TwilioRestException) -> Exception:
    """Twilio answered with an error: map its HTTP status and error code."""
    code = int(exc.code) if str(exc.code or "").isdigit() else None
    reason = f"Twilio {exc.status}: {exc.msg}"
    if code in PERMANENT_CODES:
        return DeliveryRejected(reason, permanent=True, code=str(code))
    if code in CONFIGURATION_CODES:
        logger.error("twilio configuration error", extra={"code": code, "error": exc.msg})
        return DeliveryRejected(reason, permanent=False, code=str(code))
    if exc.status in (401, 403, 404):
        logger.error("twilio credentials or account error", extra={"status": exc.status})
    return classify_http_status(int(exc.status or 0), reason, code=str(code or exc.status))


def _transport_error(exc: Exception) -> Exception:
    """No answer from Twilio: refused before sending is transient, anything later unknown."""
    if request_never_left(exc):
        return DeliveryRejected(f"could not connect to Twilio: {exc}", permanent=False)
    if isinstance(exc, urllib3.exceptions.ReadTimeoutError):  # the transport is urllib3
        return DeliveryOutcomeUnknown("Twilio did not answer in time (read timeout)")
    if is_http_error(exc):
        return DeliveryOutcomeUnknown(f"connection to Twilio failed mid-request: {exc}")
    if isinstance(exc, TwilioException):
        return DeliveryOutcomeUnknown(f"Twilio client error: {exc}")
    return DeliveryOutcomeUnknown(f"unexpected error calling Twilio: {exc!r}")
