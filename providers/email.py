"""E-mail through Django's mail API: the backend (``EMAIL_BACKEND``) is the switch.

In production an anymail backend (Postmark, SendGrid, Mailgun, SES...: ``ANYMAIL`` holds its
keys); by default ``providers.outbox.OutboxEmailBackend``, one ``.eml`` per message.
Every message is multipart (text + HTML) and carries RFC 8058 one-click unsubscribe headers.
"""

from __future__ import annotations

import logging
import smtplib
import socket
from email.utils import make_msgid
from urllib.parse import urlsplit

from anymail.exceptions import (
    AnymailAPIError,
    AnymailError,
    AnymailInvalidAddress,
    AnymailRecipientsRefused,
    AnymailSerializationError,
    AnymailUnsupportedFeature,
)
from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection

from . import (
    DeliveryOutcomeUnknown,
    DeliveryRejected,
    OutgoingEmail,
    ProviderRecord,
    Sent,
    classify_http_status,
    is_http_error,
    request_never_left,
)
from .outbox import OutboxEmailBackend, email_path

logger = logging.getLogger(__name__)


def email_channel() -> DjangoEmail:
    return DjangoEmail()


class DjangoEmail:
    def __init__(self) -> None:
        self.connection = get_connection(fail_silently=False)
        self.provider = provider_name(self.connection)

    def send(self, email: OutgoingEmail) -> Sent:
        message = EmailMultiAlternatives(
            subject=email.subject,
            body=email.text,
            from_email=email.from_email,
            to=[email.to],
            reply_to=list(email.reply_to),
            headers=dict(email.headers),
            connection=self.connection,
        )
        message.attach_alternative(email.html, "text/html")
        # The outbox backend names its file after our message id; anymail ESPs echo metadata
        # back in tracking webhooks, which lets us match events even before we stored their id.
        setattr(message, "outbox_name", email.message_id)  # noqa: B010  # read by the backends
        setattr(message, "metadata", {"message_id": email.message_id})  # noqa: B010
        if not isinstance(self.connection, OutboxEmailBackend):
            message.extra_headers.setdefault("Message-ID", make_msgid(domain=_domain()))
        try:
            sent = message.send()
        except AnymailError as exc:
            raise _anymail_error(exc) from exc
        except OSError as exc:
            if isinstance(self.connection, OutboxEmailBackend):  # the rename never happened
                raise DeliveryRejected(f"outbox not writable: {exc}", permanent=False) from exc
            raise _other_error(exc) from exc
        except Exception as exc:
            raise _other_error(exc) from exc
        if not sent:
            raise DeliveryRejected("the e-mail backend did not send the message", permanent=False)
        return Sent(self.provider, self._provider_id(message, email))

    def _provider_id(self, message: EmailMultiAlternatives, email: OutgoingEmail) -> str:
        if isinstance(self.connection, OutboxEmailBackend):
            return f"outbox:{email.message_id}"
        status = getattr(message, "anymail_status", None)
        if status is not None and status.message_id:
            ids = status.message_id
            return str(next(iter(ids))) if isinstance(ids, set) else str(ids)
        return message.extra_headers.get("Message-ID", "")

    def find(self, *, message_id: str, **kwargs) -> ProviderRecord | None:
        """Only the outbox can say after the fact whether it has a message; ESPs report
        through tracking webhooks instead."""
        if isinstance(self.connection, OutboxEmailBackend) and email_path(message_id).exists():
            return ProviderRecord(f"outbox:{message_id}", "sent")
        return None

    @property
    def can_look_up(self) -> bool:
        return isinstance(self.connection, OutboxEmailBackend)


def provider_name(connection) -> str:
    """A short label for the backend: ``outbox``, an anymail ESP (``postmark``), ``smtp``..."""
    if isinstance(connection, OutboxEmailBackend):
        return "outbox"
    esp = getattr(connection, "esp_name", None)
    if esp:
        return str(esp).lower().replace(" ", "")
    return type(connection).__module__.rsplit(".", 1)[-1][:40]


def _domain() -> str:
    return urlsplit(settings.SITE_URL).hostname or "localhost"


def _anymail_error(exc: AnymailError) -> Exception:
    if isinstance(exc, AnymailRecipientsRefused):
        return DeliveryRejected(
            f"the ESP refused the recipient: {exc.args[0] if exc.args else exc}",
            permanent=True,
            code="recipient_refused",
        )
    if isinstance(
        exc, AnymailInvalidAddress | AnymailUnsupportedFeature | AnymailSerializationError
    ):
        return DeliveryRejected(str(exc).splitlines()[0], permanent=True, code="invalid_message")
    if isinstance(exc, AnymailAPIError):
        if exc.status_code is not None:
            return classify_http_status(
                int(exc.status_code),
                f"{exc.esp_name or 'ESP'} API error {exc.status_code}",
            )
        if request_never_left(exc):
            return DeliveryRejected(
                f"could not connect to the ESP: {exc.__cause__}", permanent=False
            )
        return DeliveryOutcomeUnknown(f"the ESP call failed mid-request: {exc.__cause__ or exc}")
    return DeliveryOutcomeUnknown(f"unexpected anymail error: {exc}")


def _other_error(exc: Exception) -> Exception:
    """SMTP and other Django backends."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return DeliveryRejected(f"SMTP refused the recipient: {exc}", permanent=True, code="550")
    if isinstance(exc, smtplib.SMTPConnectError | ConnectionRefusedError | socket.gaierror):
        return DeliveryRejected(f"could not connect to the mail server: {exc}", permanent=False)
    if isinstance(exc, smtplib.SMTPResponseException):
        permanent = 500 <= exc.smtp_code < 600
        return DeliveryRejected(
            f"SMTP {exc.smtp_code}: {exc.smtp_error!r}",
            permanent=permanent,
            code=str(exc.smtp_code),
        )
    if request_never_left(exc):
        return DeliveryRejected(f"could not connect: {exc}", permanent=False)
    if is_http_error(exc):
        return DeliveryOutcomeUnknown(f"the mail call failed mid-request: {exc}")
    return DeliveryOutcomeUnknown(f"unexpected error sending e-mail: {exc!r}")
