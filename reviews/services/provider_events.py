"""What providers tell us after the send: status callbacks, tracking events, lookups.

All of them go through ``message_provider_status_apply``, which only ever moves a message forward
(``sending``/``unknown`` → ``sent`` → ``delivered``, or → ``failed``): a replayed or late event
changes nothing, and ``delivered`` never goes back to ``sent``. An event naming a provider id
other than the one stored (an older attempt) is ignored. A status that proves the provider has
the message reconciles an ``unknown`` row.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from contact_input.normalize import is_uuid
from events.models import EventType
from providers import DeliveryOutcomeUnknown, DeliveryRejected, ProviderRecord
from providers.email import email_channel
from providers.sms import sms_channel

from ..models import Channel, Contact, Message, ReviewRequest
from .events import review_request_event_record
from .lifecycle import (
    review_request_advance,
    review_request_lock,
    review_request_lock_by_message,
    review_request_note_sent,
)
from .opt_outs import contacts_opt_out
from .outcomes import message_failure_apply

logger = logging.getLogger(__name__)


class ProviderOutcome(enum.StrEnum):
    """What a provider's report says happened to a message."""

    ACCEPTED = "accepted"  # the provider has it (queued, sending, sent)
    DELIVERED = "delivered"
    FAILED = "failed"


class ProviderEventResult(enum.StrEnum):
    """What a provider's report (or a lookup of an unknown message) changed; logged, and shown
    by ``reconcile_unknown``."""

    SENT = "sent"
    DELIVERED = "delivered"
    FAILED = "failed"
    OPTED_OUT = "opted_out"  # an e-mail complaint or unsubscribe
    UNCHANGED = "unchanged"  # nothing to move (a replay, a late or irrelevant event)
    IGNORED = "ignored"  # another attempt's provider id
    NOT_FOUND = "not_found"
    LOOKUP_FAILED = "lookup_failed"  # the provider could not be asked
    STILL_UNKNOWN = "still_unknown"  # nothing to learn yet: asked again later


TWILIO_STATUSES = {
    "accepted": ProviderOutcome.ACCEPTED,
    "queued": ProviderOutcome.ACCEPTED,
    "scheduled": ProviderOutcome.ACCEPTED,
    "sending": ProviderOutcome.ACCEPTED,
    "sent": ProviderOutcome.ACCEPTED,
    "delivered": ProviderOutcome.DELIVERED,
    "read": ProviderOutcome.DELIVERED,
    "undelivered": ProviderOutcome.FAILED,
    "failed": ProviderOutcome.FAILED,
    "canceled": ProviderOutcome.FAILED,
}


def message_provider_status_apply(
    *,
    message_id: str,
    outcome: ProviderOutcome,
    provider_message_id: str = "",
    error_code: str = "",
    detail: str = "",
    suppress: bool = False,
    at: datetime | None = None,
) -> ProviderEventResult:
    """Apply one provider report to a message. Returns what changed: ``SENT``, ``DELIVERED``,
    ``FAILED``, ``UNCHANGED``, ``IGNORED`` (another attempt's id) or ``NOT_FOUND``.

    ``suppress``: the address must never be used again (a hard bounce): the contact is opted
    out of the channel, which also stops the request's other messages on it.
    """
    at = at or timezone.now()
    with transaction.atomic():
        review_request_lock_by_message(message_id=message_id)
        message = (
            Message.objects.select_for_update(of=("self",))
            .select_related("review_request__contact")
            .filter(pk=message_id)
            .first()
        )
        if message is None:
            return ProviderEventResult.NOT_FOUND
        if (
            provider_message_id
            and message.provider_message_id
            and provider_message_id != message.provider_message_id
        ):
            return ProviderEventResult.IGNORED
        result = ProviderEventResult.UNCHANGED
        if message.status in (Message.Status.SENDING, Message.Status.UNKNOWN) and outcome in (
            ProviderOutcome.ACCEPTED,
            ProviderOutcome.DELIVERED,
        ):
            _mark_sent(message, provider_message_id, at)
            result = ProviderEventResult.SENT
        if outcome == ProviderOutcome.DELIVERED and message.status == Message.Status.SENT:
            message.save(update_fields=message.transition(Message.Status.DELIVERED, at=at))
            if ReviewRequest.objects.filter(
                pk=message.review_request_id, status=ReviewRequest.Status.SENT
            ).update(status=ReviewRequest.Status.DELIVERED, delivered_at=at, updated_at=at):
                request = message.review_request  # read with the message, before the UPDATE
                request.status, request.delivered_at = ReviewRequest.Status.DELIVERED, at
                review_request_event_record(
                    request=request, type=EventType.REVIEW_REQUEST_DELIVERED, at=at
                )
            result = ProviderEventResult.DELIVERED
        elif outcome == ProviderOutcome.FAILED and message.status in (
            Message.Status.SENDING,
            Message.Status.UNKNOWN,
            Message.Status.SENT,
        ):
            _mark_failed(message, provider_message_id, error_code, detail, suppress, at)
            result = ProviderEventResult.FAILED
    if result != ProviderEventResult.UNCHANGED:
        logger.info(
            "provider status applied",
            extra={"message_id": str(message_id), "outcome": outcome, "result": result},
        )
    return result


def _mark_sent(message: Message, provider_message_id: str, at: datetime) -> None:
    was_unknown = message.status == Message.Status.UNKNOWN
    fields = message.transition(Message.Status.SENT, at=at)
    # An unknown message went out when the send was attempted.
    sent_at = message.sending_at if was_unknown and message.sending_at else at
    message.sent_at = sent_at
    if provider_message_id:
        message.provider_message_id = provider_message_id
    if not message.to_address:
        message.to_address = message.review_request.contact.address_for(message.channel)
    message.last_error, message.last_error_code = "", ""
    message.save(
        update_fields=[
            *fields,
            "provider_message_id",
            "to_address",
            "last_error",
            "last_error_code",
        ]
    )
    review_request_note_sent(
        request=review_request_lock(request_id=message.review_request_id), at=sent_at
    )


def _mark_failed(
    message: Message,
    provider_message_id: str,
    error_code: str,
    detail: str,
    suppress: bool,
    at: datetime,
) -> None:
    if provider_message_id and not message.provider_message_id:
        message.provider_message_id = provider_message_id
    message.last_error = (detail or "the provider reported the message undelivered")[:2000]
    message.last_error_code = (error_code or "undelivered")[:64]
    message.save(
        update_fields=[
            *message.transition(Message.Status.FAILED, at=at),
            "provider_message_id",
            "last_error",
            "last_error_code",
        ]
    )
    message_failure_apply(message=message, code=error_code, raw_text=message.last_error, at=at)
    request = message.review_request
    if suppress:
        # A hard bounce: the request failed (above); the address is never used again.
        contacts_opt_out(
            contacts=[request.contact],
            channel=message.channel,
            source=Contact.OptOutSource.EMAIL_BOUNCE,
            raw_text=message.last_error[:500],
            at=at,
        )


# --- Twilio ---------------------------------------------------------------------------------------


def twilio_status_record(
    *, message_id: str, sid: str, status: str, error_code: str = ""
) -> ProviderEventResult:
    """A Twilio status callback (``/webhooks/twilio/status/<message id>/``)."""
    outcome = TWILIO_STATUSES.get((status or "").lower())
    if outcome is None or not is_uuid(message_id):
        return ProviderEventResult.UNCHANGED
    detail = f"Twilio reported the message {status}" + (
        f" (error {error_code})" if error_code else ""
    )
    return message_provider_status_apply(
        message_id=message_id,
        outcome=outcome,
        provider_message_id=sid,
        error_code=error_code,
        detail=detail,
    )


# --- anymail tracking -----------------------------------------------------------------------------

_HARD_REJECT_REASONS = {"bounced", "invalid"}


def email_event_record(
    *,
    event_type: str,
    esp_message_id: str = "",
    our_message_id: str = "",
    event_id: str = "",
    reject_reason: str = "",
    description: str = "",
) -> ProviderEventResult:
    """An anymail tracking event, normalised. Unknown messages are ignored (200 to the ESP)."""
    message = _email_message(our_message_id, esp_message_id)
    if message is None:
        return ProviderEventResult.NOT_FOUND
    if event_type in ("complained", "unsubscribed"):
        source = (
            Contact.OptOutSource.EMAIL_COMPLAINT
            if event_type == "complained"
            else Contact.OptOutSource.EMAIL_UNSUBSCRIBE
        )
        newly = contacts_opt_out(
            contacts=[message.review_request.contact],
            channel=Channel.EMAIL,
            source=source,
            raw_text=description or f"ESP event: {event_type}",
            external_id=event_id or f"{event_type}:{message.pk}",
        )
        return ProviderEventResult.OPTED_OUT if newly else ProviderEventResult.UNCHANGED
    if event_type in ("queued", "sent"):
        outcome = ProviderOutcome.ACCEPTED
    elif event_type == "delivered":
        outcome = ProviderOutcome.DELIVERED
    elif event_type in ("bounced", "rejected", "failed"):
        outcome = ProviderOutcome.FAILED
    else:
        return (
            ProviderEventResult.UNCHANGED
        )  # opened, clicked, deferred...: not part of the delivery state
    suppress = event_type == "bounced" or (
        event_type == "rejected" and reject_reason in _HARD_REJECT_REASONS
    )
    return message_provider_status_apply(
        message_id=str(message.pk),
        outcome=outcome,
        provider_message_id=esp_message_id,
        error_code=reject_reason or event_type,
        detail=description or f"the e-mail provider reported: {event_type}",
        suppress=suppress,
    )


def _email_message(our_message_id: str, esp_message_id: str) -> Message | None:
    queryset = Message.objects.select_related("review_request__contact").filter(
        channel=Channel.EMAIL
    )
    if is_uuid(our_message_id):
        found = queryset.filter(pk=our_message_id).first()
        if found is not None:
            return found
    if esp_message_id:
        return queryset.filter(provider_message_id=esp_message_id).order_by("-sent_at").first()
    return None


# --- reconciling unknown messages -----------------------------------------------------------------


@dataclass(frozen=True)
class ReconcileRow:
    message_id: str
    channel: str
    to: str
    unknown_for: timedelta
    result: ProviderEventResult
    detail: str = ""


def messages_reconcile_unknown(
    *,
    now: datetime | None = None,
    older_than: timedelta | None = None,
    max_age: timedelta | None = None,
    limit: int = 200,
) -> list[ReconcileRow]:
    """Ask the provider about messages whose outcome is unknown (``messages_reconcile_unknown``, and
    beat every ``UNKNOWN_RECONCILE_INTERVAL_SECONDS``).

    * The provider has it → ``sent``/``delivered``/``failed`` as it reports, follow-ups planned.
    * A provider that can be asked (Twilio, the outbox) has no record of it a while after the
      attempt (``older_than``) → ``failed``: it was never accepted, so it was not sent, and
      staff may resend it.
    * A provider that cannot be asked (an ESP: its tracking webhooks reconcile instead) and
      still nothing after ``max_age`` → ``failed`` with code ``unknown_expired``.

    Never resends anything. Each lookup runs outside any transaction.
    """
    now = now or timezone.now()
    if older_than is None:
        older_than = timedelta(minutes=settings.UNKNOWN_RECONCILE_AFTER_MINUTES)
    if max_age is None:
        max_age = timedelta(hours=settings.UNKNOWN_MAX_AGE_HOURS)
    rows = []
    candidates = list(
        Message.objects.filter(status=Message.Status.UNKNOWN, unknown_at__lte=now - older_than)
        .select_related("review_request__contact")
        .order_by("unknown_at")[:limit]
    )
    for message in candidates:
        rows.append(_reconcile_one(message, now=now, max_age=max_age))
    return rows


def _reconcile_one(message: Message, *, now: datetime, max_age: timedelta) -> ReconcileRow:
    request = message.review_request
    to = message.to_address or request.contact.address_for(message.channel)
    age = now - (message.unknown_at or now)

    def row(result: ProviderEventResult, detail: str = "") -> ReconcileRow:
        return ReconcileRow(
            message_id=str(message.pk),
            channel=message.channel,
            to=to,
            unknown_for=age,
            result=result,
            detail=detail,
        )

    channel = sms_channel() if message.channel == Channel.SMS else email_channel()
    can_look_up = message.channel == Channel.SMS or getattr(channel, "can_look_up", False)
    record: ProviderRecord | None = None
    if can_look_up:
        try:
            if message.provider_message_id and hasattr(channel, "fetch"):
                record = channel.fetch(message.provider_message_id)
            else:
                since = (message.sending_at or message.unknown_at or now) - timedelta(minutes=5)
                # The request's token is in every message's review link, whatever SITE_URL
                # was when it was sent.
                record = channel.find(
                    message_id=str(message.pk), to=to, marker=f"/r/{request.token}/", since=since
                )
        except (DeliveryRejected, DeliveryOutcomeUnknown) as exc:
            return row(ProviderEventResult.LOOKUP_FAILED, str(exc)[:200])
    if record is not None:
        outcome = TWILIO_STATUSES.get(record.status.lower(), ProviderOutcome.ACCEPTED)
        result = message_provider_status_apply(
            message_id=str(message.pk),
            outcome=outcome,
            provider_message_id=record.provider_message_id,
            error_code=record.error_code,
            detail=f"found at the provider: {record.status}",
        )
        return row(result, record.provider_message_id)
    if can_look_up:
        detail = (
            "The provider has no record of this message: it was never accepted, so it was not "
            "sent. It may be resent (resend_message)."
        )
        result = _give_up(message, "not_at_provider", detail)
        return row(result, detail)
    if age >= max_age:
        detail = (
            f"No delivery report within {max_age}; whether it was sent is not known. Resending "
            "may duplicate it."
        )
        result = _give_up(message, "unknown_expired", detail)
        return row(result, detail)
    return row(ProviderEventResult.STILL_UNKNOWN)


def _give_up(message: Message, code: str, detail: str) -> ProviderEventResult:
    now = timezone.now()
    with transaction.atomic():
        request = review_request_lock_by_message(message_id=message.pk, load=True)
        locked = (
            Message.objects.select_for_update(of=("self",))
            .filter(pk=message.pk, status=Message.Status.UNKNOWN)
            .first()
        )
        if request is None or locked is None:
            return ProviderEventResult.UNCHANGED
        locked.last_error, locked.last_error_code = detail, code
        locked.save(
            update_fields=[
                *locked.transition(Message.Status.FAILED, at=now),
                "last_error",
                "last_error_code",
            ]
        )
        # Not the address's fault: the request moves on to its next step, if any.
        review_request_advance(
            request=request, cause=ReviewRequest.Status.FAILED, at=now, locked=True
        )
    return ProviderEventResult.FAILED
