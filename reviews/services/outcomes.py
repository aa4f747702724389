"""Recording the outcome of a send attempt, and what follows from it.

Each outcome is one short transaction, guarded by the attempt number the claim gave (a late
outcome never overwrites a later attempt): provider id → ``sent`` (and the next follow-up is
planned); rejected-permanent → ``failed``; rejected-transient → ``pending`` with exponential
backoff and jitter, at most ``DELIVERY_MAX_ATTEMPTS`` attempts; outcome unknown → ``unknown``,
never sent again automatically.
"""

from __future__ import annotations

import enum
import logging
import random
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from providers import Sent
from providers.sms import UNSUBSCRIBED_CODE

from .. import db
from ..models import BusinessSettings, Channel, Contact, Message, ReviewRequest
from .lifecycle import (
    OwnerReads,
    review_request_advance,
    review_request_lock_by_message,
    review_request_note_sent,
)
from .opt_outs import contacts_opt_out

logger = logging.getLogger(__name__)


class SendResult(enum.StrEnum):
    """What became of one message a send task carried (``messages_send``); a refused attempt's
    record (``message_record_failure``) answers ``FAILED``, ``RETRY`` or ``SKIPPED``."""

    SKIPPED = "skipped"  # not claimed: someone else has or had it
    SENT = "sent"
    FAILED = "failed"
    RETRY = "retry"  # back to pending with backoff
    UNKNOWN = "unknown"
    CANCELLED = "cancelled"  # found opted out / ended when claimed: not sent
    HELD = "held"  # the business lists no review site: back to waiting, not sent


def message_record_sent(
    *,
    message_id: str,
    request_id: uuid.UUID,
    attempt: int,
    sent: Sent,
    to_address: str,
    owner: OwnerReads | None = None,
) -> None:
    """The provider accepted the message: ``sent``, then its request moves on.

    ``owner``: what the caller already read about the request's owner (a send batch)."""
    now = timezone.now()
    with transaction.atomic():
        recorded = db.message_record_sent_rows(
            request_id=request_id,
            message_id=message_id,
            attempt=attempt,
            changes={
                "status": Message.Status.SENT,
                "sent_at": now,
                "updated_at": now,
                "provider": sent.provider,
                "provider_message_id": sent.provider_message_id,
                "to_address": to_address,
                "last_error": "",
                "last_error_code": "",
            },
        )
        if recorded is None:
            # A status callback recorded it first (same SID), or staff moved the row on.
            logger.info("send outcome already recorded", extra={"message_id": message_id})
            return
        request, messages = recorded
        review_request_note_sent(request=request, at=now, owner=owner, messages=messages)


def message_record_failure(
    *,
    message_id: str,
    attempt: int,
    permanent: bool,
    code: str,
    reason: str,
    retry_after: float | None = None,
) -> SendResult:
    """The provider refused the attempt (nothing was sent): ``failed`` for good, or back to
    ``pending`` for a later attempt. Returns ``FAILED``, ``RETRY`` or ``SKIPPED`` (the attempt
    was recorded already)."""
    now = timezone.now()
    with transaction.atomic():
        review_request_lock_by_message(message_id=message_id)
        message = (
            Message.objects.filter(
                pk=message_id,
                attempts=attempt,
                status__in=Message.ATTEMPT_OPEN_STATUSES,
            )
            .select_related("review_request__contact", "review_request__owner")
            .select_for_update(of=("self",))
            .first()
        )
        if message is None:
            return SendResult.SKIPPED
        message.last_error_code = code[:64]
        if not permanent and attempt < settings.DELIVERY_MAX_ATTEMPTS:
            message.last_error = reason[:2000]
            _retry_later(message, now=now, retry_after=retry_after)
            return SendResult.RETRY
        if not permanent:
            reason = f"gave up after {attempt} attempts; last error: {reason}"
        message.last_error = reason[:2000]
        message.save(
            update_fields=[
                *message.transition(Message.Status.FAILED, at=now),
                "last_error",
                "last_error_code",
            ]
        )
        message_failure_apply(
            message=message, code=code, raw_text=f"Twilio error {code}: {reason}", at=now
        )
    return SendResult.FAILED


def message_failure_apply(
    *, message: Message, code: str | None, raw_text: str, at: datetime
) -> None:
    """In the transaction that saved ``message`` failed for good (the send path, or a delivery
    report): a Twilio refusal because the person replied STOP to our number is their SMS
    opt-out; then the request moves on without this channel, or ends."""
    request = message.review_request
    if message.channel == Channel.SMS and code == str(UNSUBSCRIBED_CODE):
        contacts_opt_out(
            contacts=[request.contact],
            channel=Channel.SMS,
            source=Contact.OptOutSource.SMS_REPLY,
            raw_text=raw_text[:500],
            at=at,
        )
    review_request_advance(
        request=request, cause=ReviewRequest.Status.FAILED, at=at, bad_channel=message.channel
    )


def _retry_later(message: Message, *, now: datetime, retry_after: float | None) -> None:
    delay = backoff_seconds(message.attempts, retry_after=retry_after)
    request = message.review_request
    message.due_at = (
        BusinessSettings.for_owner(request.owner)
        .at(request.location_id)
        .send_time(
            channel=message.channel,
            requested=now + timedelta(seconds=delay),
            phone=request.contact.phone,
        )
        .at
    )
    message.save(
        update_fields=[
            *message.transition(Message.Status.PENDING, at=now),
            "due_at",
            "last_error",
            "last_error_code",
        ]
    )
    if message.step == 0:
        ReviewRequest.objects.filter(pk=request.pk, status=ReviewRequest.Status.SENDING).update(
            status=ReviewRequest.Status.SCHEDULED, updated_at=now
        )
    logger.info(
        "send rejected for now; retrying later",
        extra={
            "message_id": str(message.pk),
            "attempt": message.attempts,
            "due_at": str(message.due_at),
        },
    )


def backoff_seconds(attempt: int, *, retry_after: float | None = None) -> float:
    """Exponential backoff with jitter: base * 2^(attempt-1), capped, times 0.5-1.0 (so retries
    of many messages after one outage spread out); never sooner than a provider's Retry-After."""
    ceiling = min(
        settings.DELIVERY_RETRY_MAX_SECONDS,
        settings.DELIVERY_RETRY_BASE_SECONDS * 2 ** max(attempt - 1, 0),
    )
    delay = ceiling * random.uniform(0.5, 1.0)  # jitter, not security
    return float(max(delay, retry_after or 0.0))


def message_record_cancelled(*, message_id: str, attempt: int, reason: str) -> None:
    """The claimed message was not sent (the pre-send rule refused it: the contact opted out or
    the request ended meanwhile): ``cancelled``, and the request moves on without it."""
    now = timezone.now()
    with transaction.atomic():
        found = _record_not_sent(
            message_id=message_id,
            attempt=attempt,
            to=Message.Status.CANCELLED,
            at=now,
            reason=reason,
        )
        if found is not None:
            request, _ = found
            review_request_advance(
                request=request, cause=ReviewRequest.Status.OPTED_OUT, at=now, locked=True
            )


def message_record_held(*, message_id: str, attempt: int, reason: str) -> None:
    """The claimed message was not sent because it must wait (``Message.hold_reason``: the
    business lists no review site any more): back to ``planned``, held with the reason until
    ``messages_release_waiting``; a first message's request is ``scheduled`` again."""
    now = timezone.now()
    with transaction.atomic():
        found = _record_not_sent(
            message_id=message_id,
            attempt=attempt,
            to=Message.Status.PLANNED,
            at=now,
            reason=reason,
            due_at=None,
            last_error_code=Message.WAITING_FOR_REVIEW_SITE,
        )
        if found is None:
            return
        request, message = found
        if message.step == 0 and request.status == ReviewRequest.Status.SENDING:
            request.save(update_fields=request.transition(ReviewRequest.Status.SCHEDULED, at=now))
    logger.info("message held: it waits for a review site", extra={"message_id": message_id})


def _record_not_sent(
    *, message_id: str, attempt: int, to: str, at: datetime, reason: str, **fields: object
) -> tuple[ReviewRequest, Message] | None:
    """In a transaction: a claimed attempt that did not go out moves ``to`` with the reason
    (and ``fields``), its request locked first; the request (with its contact and owner) and
    the message, or ``None`` when the attempt was recorded already."""
    request = review_request_lock_by_message(message_id=message_id, load=True)
    message = (
        Message.objects.filter(pk=message_id, attempts=attempt, status=Message.Status.SENDING)
        .select_for_update(of=("self",))
        .first()
    )
    if request is None or message is None:
        return None
    message.last_error = reason
    for name, value in fields.items():
        setattr(message, name, value)
    message.save(update_fields=[*message.transition(to, at=at), "last_error", *fields])
    return request, message


def message_record_unknown(*, message_id: str, attempt: int, code: str, reason: str) -> None:
    """The attempt may or may not have reached the provider: ``unknown``, never resent
    automatically (``messages_reconcile_unknown`` asks the provider)."""
    now = timezone.now()
    Message.objects.filter(pk=message_id, attempts=attempt, status=Message.Status.SENDING).update(
        status=Message.Status.UNKNOWN,
        unknown_at=now,
        updated_at=now,
        last_error=reason[:2000],
        last_error_code=(code or "outcome_unknown")[:64],
    )
    logger.warning(
        "send outcome unknown; not retried", extra={"message_id": message_id, "reason": reason}
    )
