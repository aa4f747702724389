"""Providers: the only code that talks to e-mail and SMS providers (the delivery channels).

It imports no app, only Django and the providers' SDKs; the delivery services in ``reviews``
call it.

Each adapter takes one outgoing message, returns the provider's id for it (``Sent``), or raises
one of two exceptions, so no SDK exception ever reaches the delivery service:

* ``DeliveryRejected(permanent=...)``: the provider answered and refused; nothing was sent.
  ``permanent`` says whether trying again later could help (a 503 or 429) or not (an invalid
  number, an unsubscribed recipient).
* ``DeliveryOutcomeUnknown``: the request may have reached the provider and been accepted (a
  read timeout after it was sent, a connection dropped mid-response). The delivery service
  never sends such a message again by itself.

Which provider is used is decided by settings only, one switch per integration: ``TWILIO_*``
credentials → Twilio, else SMS are written to ``OUTBOX_DIR``; ``EMAIL_BACKEND`` → any Django
e-mail backend (an anymail ESP in production, the outbox backend by default).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import requests
import urllib3


class DeliveryRejected(Exception):
    """The provider refused the message; nothing was sent."""

    def __init__(
        self, reason: str, *, permanent: bool, code: str = "", retry_after: float | None = None
    ):
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent
        self.code = str(code or "")
        self.retry_after = retry_after


class DeliveryOutcomeUnknown(Exception):
    """The message may have been accepted by the provider: never resend it automatically."""

    def __init__(self, reason: str, *, code: str = ""):
        super().__init__(reason)
        self.reason = reason
        self.code = str(code or "")


@dataclass(frozen=True)
class Sent:
    provider: str
    provider_message_id: str


@dataclass(frozen=True)
class OutgoingSms:
    message_id: str
    to: str
    body: str
    status_callback: str


@dataclass(frozen=True)
class OutgoingEmail:
    message_id: str
    to: str
    subject: str
    text: str
    html: str
    from_email: str
    reply_to: tuple[str, ...] = ()
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ProviderRecord:
    """What a provider reports about a message it has (for reconciling ``unknown`` rows)."""

    provider_message_id: str
    status: str  # the provider's own word: queued, sent, delivered, undelivered, failed...
    error_code: str = ""


def request_never_left(exc: BaseException | None) -> bool:
    """Whether an HTTP error happened before the request could reach the server.

    True only for failures to connect (refused, DNS, connect timeout): nothing was sent. A
    read timeout, a reset or a dropped connection after connecting may have delivered the
    request, so they are False. Follows ``__cause__`` because SDKs wrap the requests error.
    """
    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, requests.exceptions.ConnectTimeout):
            return True
        if isinstance(exc, requests.exceptions.ConnectionError) and not isinstance(
            exc, requests.exceptions.ReadTimeout
        ):
            reason = getattr(exc.args[0], "reason", None) if exc.args else None
            if isinstance(reason, urllib3.exceptions.ConnectTimeoutError):
                return True  # includes NewConnectionError (refused) and NameResolutionError
        if isinstance(exc, urllib3.exceptions.ConnectTimeoutError):
            return True
        exc = exc.__cause__
        seen += 1
    return False


def is_http_error(exc: BaseException | None) -> bool:
    """A transport-level error from requests/urllib3 (possibly wrapped by an SDK)."""
    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, requests.exceptions.RequestException | urllib3.exceptions.HTTPError):
            return True
        exc = exc.__cause__
        seen += 1
    return False


def classify_http_status(status: int, reason: str, *, code: str = "") -> Exception:
    """The exception for a provider's HTTP error status (shared by the SMS and e-mail channels).

    * 429, 500 and 503: the provider's API answered that it could not take the message now;
      retried later with backoff.
    * 401/403/404: our credentials or account settings are wrong: retried (so fixing the
      configuration in time saves the message), and logged loudly by the caller.
    * 502, 504 and any other 5xx: a gateway in front of the API answered, and the API behind
      it may have accepted the message, so the outcome is unknown.
    * any other 4xx: the provider refused this message; permanent.
    """
    code = code or str(status)
    if status in (429, 500, 503):
        return DeliveryRejected(reason, permanent=False, code=code)
    if status in (401, 403, 404):
        return DeliveryRejected(reason, permanent=False, code=code)
    if status >= 500:
        return DeliveryOutcomeUnknown(reason, code=code)
    return DeliveryRejected(reason, permanent=True, code=code)
