"""Sending one message row, recording what happened, and planning what comes next.

``send_message`` is what a send task runs. Its contract (ARCHITECTURE.md, data flow step 4):

1. Claim the row ``queued → sending`` with a conditional UPDATE (``attempts + 1``, the
   address captured). Zero rows: another worker claimed it, it was cancelled, or this is a
   redelivered task whose first run already claimed it: return without doing anything. This is
   what makes ``acks_late`` with ``reject_on_worker_lost`` safe: the database, not the broker,
   decides whether a send happens. One short transaction (one commit before the call): read
   the row with its request, contact and owner; move a first step's request ``scheduled →
   sending``; claim. The request is written before the message, the lock order of every
   transaction that changes both.
2. Check what that read found (it is the pre-send check: an opt-out, click or cancel that
   landed after the dispatcher queued the row stops it), and render.
3. Call the channel outside any transaction.
4. Record the outcome in one short transaction, guarded by the attempt number the claim gave
   (a late outcome never overwrites a later attempt): provider id → ``sent`` (and the next
   follow-up is planned); rejected-permanent → ``failed``; rejected-transient → ``pending`` with
   exponential backoff and jitter, at most ``DELIVERY_MAX_ATTEMPTS`` attempts; outcome unknown
   → ``unknown``, never sent again automatically.

Follow-ups (``advance``): after a step is sent, the next planned step whose channel the
contact can still receive becomes ``pending`` at the first message's ``sent_at`` + its offset,
moved into the sending window. A request ends ``completed`` when its last step was sent,
``failed`` when a permanent failure leaves nothing else to send, ``opted_out`` when an opt-out
does, ``clicked``/``cancelled`` at once.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import TypeVar

from django.conf import settings
from django.db import (
    DatabaseError,
    InterfaceError,
    OperationalError,
    close_old_connections,
    transaction,
)
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from .. import rendering
from ..channels import (
    DeliveryOutcomeUnknown,
    DeliveryRejected,
    OutgoingEmail,
    OutgoingSms,
    Sent,
)
from ..channels.email import email_channel
from ..channels.sms import UNSUBSCRIBED_CODE, sms_channel
from ..models import BusinessSettings, Channel, Contact, Message, ReviewRequest

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Statuses in which the outcome of an attempt may still be recorded: the claim's own status,
# or unknown when the sending lease expired before the (slow) outcome came back.
_RECORDABLE = (Message.Status.SENDING, Message.Status.UNKNOWN)
_IN_FLIGHT = frozenset(
    {Message.Status.PENDING, Message.Status.QUEUED, Message.Status.SENDING, Message.Status.UNKNOWN}
)


class SendResult:
    SKIPPED = "skipped"  # not claimed: someone else has or had it
    SENT = "sent"
    FAILED = "failed"
    RETRY = "retry"  # back to pending with backoff
    UNKNOWN = "unknown"
    CANCELLED = "cancelled"  # claimed, then found opted out / ended before the provider call


def send_message(*, message_id: str) -> str:
    """Send one queued message at most once. Idempotent: safe to run twice for one row.

    Runs outside a transaction; the provider call happens between two short transactions.
    Database reads and writes around the call are retried through a short outage (the claim
    too: if a lost connection had committed it, the retry finds nothing to claim and the lease
    deals with the row); the provider call never is.
    """
    message = _with_db_retry(lambda: _claim(message_id))
    if message is None:
        return SendResult.SKIPPED  # claimed by another run, cancelled, or already done
    prepared = _with_db_retry(lambda: _prepare(message))
    attempt = message.attempts
    if prepared.render_error:
        _with_db_retry(
            lambda: record_failure(
                message_id=message_id,
                attempt=attempt,
                permanent=True,
                code="render_error",
                reason=f"could not render the message: {prepared.render_error}",
            )
        )
        return SendResult.FAILED
    if prepared.blocked:
        _with_db_retry(
            lambda: record_cancelled(
                message_id=message_id, attempt=attempt, reason=prepared.blocked
            )
        )
        return SendResult.CANCELLED

    try:
        channel = sms_channel() if message.channel == Channel.SMS else email_channel()
    except Exception as exc:  # our configuration (e.g. an ESP without its key): nothing sent
        logger.exception("channel not usable", extra={"message_id": message_id})
        return _with_db_retry(
            partial(
                record_failure,
                message_id=message_id,
                attempt=attempt,
                permanent=False,
                code="channel_configuration",
                reason=f"the {message.channel} channel is not usable: {exc}"[:1000],
            )
        )
    try:
        sent = channel.send(prepared.outgoing)  # the only network call; no transaction is open
    except DeliveryRejected as exc:
        return _with_db_retry(
            partial(
                record_failure,
                message_id=message_id,
                attempt=attempt,
                permanent=exc.permanent,
                code=exc.code,
                reason=exc.reason,
                retry_after=exc.retry_after,
            )
        )
    except DeliveryOutcomeUnknown as exc:
        _with_db_retry(
            partial(
                record_unknown,
                message_id=message_id,
                attempt=attempt,
                code=exc.code,
                reason=exc.reason,
            )
        )
        return SendResult.UNKNOWN
    except Exception as exc:
        # Not a classified outcome (a bug, the time limit hit mid-call): it may have been
        # sent, so it is recorded as unknown, never retried.
        logger.exception("unexpected error sending", extra={"message_id": message_id})
        _with_db_retry(
            partial(
                record_unknown,
                message_id=message_id,
                attempt=attempt,
                code="unexpected_error",
                reason=f"unexpected error during the provider call: {exc!r}"[:1000],
            )
        )
        return SendResult.UNKNOWN
    _with_db_retry(
        partial(
            record_sent,
            message_id=message_id,
            request_id=message.review_request_id,
            attempt=attempt,
            sent=sent,
            to_address=prepared.outgoing.to,
        )
    )
    return SendResult.SENT


def _claim(message_id: str) -> Message | None:
    """``queued → sending``: the claimed row with its request, contact and owner, or ``None``
    (another worker got it, it was cancelled, or it is gone).

    One transaction, so the claim and what comes with it cost one commit: the read, the first
    step's request ``scheduled → sending`` (conditional, before the message: request, then
    message, like every transaction that changes both), the claim.
    """
    now = timezone.now()
    with transaction.atomic():
        try:
            message = Message.objects.select_related(
                "review_request__contact", "review_request__owner"
            ).get(pk=message_id)
        except Message.DoesNotExist:
            return None
        if message.status != Message.Status.QUEUED:
            return None  # a redelivered task, or a row already cancelled: nothing to do
        request = message.review_request
        if message.step == 0 and request.status == ReviewRequest.Status.SCHEDULED:
            ReviewRequest.objects.filter(
                pk=request.pk, status=ReviewRequest.Status.SCHEDULED
            ).update(
                status=ReviewRequest.Status.SENDING,
                sending_at=Coalesce(F("sending_at"), Value(now)),
                updated_at=now,
            )
        # Captured before the call: reconciling an unknown outcome looks the address up.
        address = request.contact.address_for(message.channel)
        # ``attempts`` as read: if another run claimed the row since (and it came back to
        # queued), this run is the stale one; the row's queued lease re-dispatches it.
        claimed = Message.objects.filter(
            pk=message_id, status=Message.Status.QUEUED, attempts=message.attempts
        ).update(
            status=Message.Status.SENDING,
            sending_at=now,
            updated_at=now,
            attempts=message.attempts + 1,
            to_address=address,
        )
        if claimed != 1:
            transaction.set_rollback(True)  # the request's update too
            return None
    message.status, message.sending_at, message.updated_at = Message.Status.SENDING, now, now
    message.attempts += 1
    message.to_address = address
    return message


@dataclass
class _Prepared:
    outgoing: OutgoingSms | OutgoingEmail | None = None
    render_error: str = ""
    blocked: str = ""


def _prepare(message: Message) -> _Prepared:
    """Render the claimed row and check that it may go out."""
    prepared = _Prepared()
    policy = BusinessSettings.for_owner(message.review_request.owner)
    try:
        prepared.outgoing = _outgoing(message, policy)
    except (DatabaseError, InterfaceError):
        raise
    except Exception as exc:  # a broken template or default file: nothing was sent
        logger.exception("message could not be rendered", extra={"message_id": str(message.pk)})
        prepared.render_error = str(exc) or repr(exc)
        return prepared
    prepared.blocked = _blocked_reason(message)
    return prepared


def _outgoing(message: Message, policy: BusinessSettings):
    address = message.to_address  # captured by the claim
    if message.channel == Channel.SMS:
        return OutgoingSms(
            message_id=str(message.pk),
            to=address,
            body=rendering.render_sms(message, policy),
            status_callback=f"{settings.SITE_URL}/webhooks/twilio/status/{message.pk}/",
        )
    rendered = rendering.render_email(message, policy)
    return OutgoingEmail(
        message_id=str(message.pk),
        to=address,
        subject=rendered.subject,
        text=rendered.text,
        html=rendered.html,
        from_email=rendered.from_email,
        reply_to=rendered.reply_to,
        headers=rendered.headers,
    )


def _blocked_reason(message: Message) -> str:
    """Why this claimed message must not go out after all; ``""`` when it may. ``message`` was
    read with its request and contact by the claim's transaction: an opt-out, click or cancel
    committed since the dispatcher queued it is seen here (one committed during the provider
    call cannot stop that call, whatever is read before it)."""
    request = message.review_request
    if not request.is_active:
        return f"not sent: the request ended ({request.status}) before it went out"
    if not request.contact.can_receive(message.channel):
        return _unreachable_reason(request.contact, message.channel)
    return ""


def _with_db_retry(step: Callable[[], T], *, seconds: float = 30.0) -> T:
    """Run one database step, retrying while the database is unreachable (a restart).

    Only database steps are retried, never the provider call: an outcome we know must not be
    lost. If the database stays away, the row is left ``sending``; its lease turns it
    ``unknown`` and the provider's status callback reconciles it.
    """
    deadline = time.monotonic() + seconds
    pause = 0.25
    while True:
        try:
            return step()
        except (OperationalError, InterfaceError):
            if time.monotonic() + pause > deadline:
                raise
            logger.warning("database unavailable around a send; retrying")
            close_old_connections()
            time.sleep(pause)
            pause = min(pause * 2, 4.0)


# --- recording outcomes ---------------------------------------------------------------------------


def lock_request_of(message_id: str, *, load: bool = False) -> ReviewRequest | None:
    """Lock a message's request before the message itself (call inside a transaction).

    Every transaction that changes a message and its request takes the request first (clicks,
    opt-outs and ``advance`` lock the request, then its messages), so two of them can never
    wait for each other in opposite orders. Only the request row is locked. ``load``: return
    the request with its contact and owner (same query), ready for ``advance(..., locked=True)``.
    """
    requests = ReviewRequest.objects.select_for_update(of=("self",)).filter(messages__pk=message_id)
    return (requests.select_related("contact", "owner") if load else requests.only("pk")).first()


def lock_request(request_id) -> ReviewRequest:
    """``lock_request_of(..., load=True)`` for a caller that knows the request's id (no join
    through the messages). Only the request row is locked: locking the joined owner would
    serialise every send of a business on its user row, and the contact would invert the
    opt-out's lock order (contact, then request)."""
    return (
        ReviewRequest.objects.select_for_update(of=("self",))
        .select_related("contact", "owner")
        .get(pk=request_id)
    )


def _recordable(message_id: str, attempt: int):
    return Message.objects.filter(pk=message_id, attempts=attempt, status__in=_RECORDABLE)


def record_sent(*, message_id: str, request_id, attempt: int, sent: Sent, to_address: str) -> str:
    now = timezone.now()
    with transaction.atomic():
        request = lock_request(request_id)
        updated = _recordable(message_id, attempt).update(
            status=Message.Status.SENT,
            sent_at=now,
            updated_at=now,
            provider=sent.provider,
            provider_message_id=sent.provider_message_id,
            to_address=to_address,
            last_error="",
            last_error_code="",
        )
        if updated != 1:
            # A status callback recorded it first (same SID), or staff moved the row on.
            current = Message.objects.filter(pk=message_id).values_list(
                "status", "provider_message_id"
            )
            logger.info(
                "send outcome already recorded",
                extra={"message_id": message_id, "current": list(current)},
            )
            return SendResult.SENT
        # The request locked and loaded above: no second read of it or of the message.
        _request_sent(request, at=now)
    return SendResult.SENT


def record_failure(
    *,
    message_id: str,
    attempt: int,
    permanent: bool,
    code: str,
    reason: str,
    retry_after: float | None = None,
) -> str:
    now = timezone.now()
    with transaction.atomic():
        lock_request_of(message_id)
        message = (
            _recordable(message_id, attempt)
            .select_related("review_request__contact", "review_request__owner")
            .select_for_update(of=("self",))
            .first()
        )
        if message is None:
            return SendResult.SKIPPED
        if not permanent and attempt < settings.DELIVERY_MAX_ATTEMPTS:
            return _retry_later(message, now=now, code=code, reason=reason, retry_after=retry_after)
        if not permanent:
            reason = f"gave up after {attempt} attempts; last error: {reason}"
        message.last_error, message.last_error_code = reason[:2000], code[:64]
        message.save(
            update_fields=[
                *message.transition(Message.Status.FAILED, at=now),
                "last_error",
                "last_error_code",
            ]
        )
        after_failed(message, code=code, raw_text=f"Twilio error {code}: {reason}", at=now)
    return SendResult.FAILED


def after_failed(message: Message, *, code: str | None, raw_text: str, at: datetime) -> None:
    """In the transaction that saved ``message`` failed for good (the send path, or a delivery
    report): a Twilio refusal because the person replied STOP to our number is their SMS
    opt-out; then the request moves on without this channel, or ends."""
    request = message.review_request
    if message.channel == Channel.SMS and code == str(UNSUBSCRIBED_CODE):
        from .opt_outs import contacts_opt_out

        contacts_opt_out(
            contacts=[request.contact],
            channel=Channel.SMS,
            source=Contact.OptOutSource.SMS_REPLY,
            raw_text=raw_text[:500],
            at=at,
        )
    advance(request, cause=ReviewRequest.Status.FAILED, at=at, bad_channel=message.channel)


def _retry_later(
    message: Message, *, now: datetime, code: str, reason: str, retry_after: float | None
) -> str:
    delay = backoff_seconds(message.attempts, retry_after=retry_after)
    request = message.review_request
    policy = BusinessSettings.for_owner(request.owner)
    due = policy.send_time(
        channel=message.channel,
        requested=now + timedelta(seconds=delay),
        phone=request.contact.phone,
    ).at
    message.due_at = due
    message.last_error, message.last_error_code = reason[:2000], code[:64]
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
        extra={"message_id": str(message.pk), "attempt": message.attempts, "due_at": str(due)},
    )
    return SendResult.RETRY


def backoff_seconds(attempt: int, *, retry_after: float | None = None) -> float:
    """Exponential backoff with jitter: base * 2^(attempt-1), capped, times 0.5-1.0 (so retries
    of many messages after one outage spread out); never sooner than a provider's Retry-After."""
    ceiling = min(
        settings.DELIVERY_RETRY_MAX_SECONDS,
        settings.DELIVERY_RETRY_BASE_SECONDS * 2 ** max(attempt - 1, 0),
    )
    delay = ceiling * random.uniform(0.5, 1.0)  # jitter, not security
    return max(delay, retry_after or 0.0)


def record_unknown(*, message_id: str, attempt: int, code: str, reason: str) -> None:
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


def record_cancelled(*, message_id: str, attempt: int, reason: str) -> None:
    """The claimed row was not sent: the contact opted out or the request ended meanwhile."""
    now = timezone.now()
    with transaction.atomic():
        request = lock_request_of(message_id, load=True)
        message = (
            Message.objects.filter(pk=message_id, attempts=attempt, status=Message.Status.SENDING)
            .select_for_update(of=("self",))
            .first()
        )
        if message is None:
            return
        message.last_error = reason
        message.save(
            update_fields=[*message.transition(Message.Status.CANCELLED, at=now), "last_error"]
        )
        advance(request, cause=ReviewRequest.Status.OPTED_OUT, at=now, locked=True)


# --- the request's lifecycle ----------------------------------------------------------------------


def after_sent(message: Message, *, at: datetime) -> None:
    """In the transaction that moved ``message`` to sent: update its request, plan the next."""
    _request_sent(lock_request(message.review_request_id), at=at)


def _request_sent(request: ReviewRequest, *, at: datetime) -> None:
    """``after_sent`` for a request already locked and loaded with its contact and owner."""
    changed: list[str] = []
    if request.status in (ReviewRequest.Status.SCHEDULED, ReviewRequest.Status.SENDING):
        changed = request.transition(ReviewRequest.Status.SENT, at=at)
    elif request.sent_at is None:
        # Ended (opted out, cancelled) while this message was already with the provider: it
        # still reached the contact, which the cooldown must know.
        request.sent_at = at
        changed = ["sent_at", "updated_at"]
    # Saved by advance with its own changes (a last step's "completed"): one UPDATE.
    advance(request, cause=ReviewRequest.Status.SENT, at=at, locked=True, changed=changed)


def advance(
    request: ReviewRequest,
    *,
    cause: str,
    at: datetime,
    bad_channel: str | None = None,
    locked: bool = False,
    changed: Sequence[str] = (),
) -> None:
    """Decide what comes next for an active request; call inside a transaction.

    ``cause`` is what just happened (``sent``, ``failed``, ``opted_out``, ``cancelled``): it
    names the ending when nothing is left. ``bad_channel``: a permanent failure on this channel
    cancels the request's other unsent messages on it (the address does not work).
    ``locked``: ``request`` was just selected for update in this transaction, with its contact
    and owner (the send path), so it is not read again. ``changed``: fields of that locked
    request its caller changed and has not saved yet; saved with the request's own changes
    here, in one UPDATE.
    """
    if changed and not locked:
        raise ValueError("changed fields of a request that advance reads again would be lost")
    # An opt-out that commits after this read waits for the request lock, then runs
    # ``advance`` itself with the fresh contact.
    if not locked:
        request = lock_request(request.pk)
    fields = [*changed, *_advance(request, cause=cause, at=at, bad_channel=bad_channel)]
    if fields:
        request.save(update_fields=list(dict.fromkeys(fields)))


def _advance(
    request: ReviewRequest, *, cause: str, at: datetime, bad_channel: str | None
) -> list[str]:
    """``advance`` on the locked request; returns the request's fields it changed (unsaved)."""
    if not request.is_active:
        return []
    contact = request.contact
    messages = list(request.messages.select_for_update().order_by("step"))
    for m in messages:
        if m.status in Message.CANCELLABLE_STATUSES and (
            m.channel == bad_channel or not contact.can_receive(m.channel)
        ):
            why = (
                f"not sent: a message by {Channel(m.channel).label} failed permanently"
                if m.channel == bad_channel
                else _unreachable_reason(contact, m.channel)
            )
            m.last_error = why
            m.save(update_fields=[*m.transition(Message.Status.CANCELLED, at=at), "last_error"])
    if any(m.status in _IN_FLIGHT for m in messages):
        return []  # a message is due, in flight or waiting to be reconciled
    first = messages[0] if messages else None
    following = next((m for m in messages if m.status == Message.Status.PLANNED), None)
    if first is not None and first.sent_at is not None and following is not None:
        policy = BusinessSettings.for_owner(request.owner)
        due = policy.send_time(
            channel=following.channel,
            requested=first.sent_at + following.planned_offset,
            phone=contact.phone,
        ).at
        following.due_at = due
        following.save(
            update_fields=[*following.transition(Message.Status.PENDING, at=at), "due_at"]
        )
        if due <= timezone.now():
            from .dispatch import dispatch_kick

            transaction.on_commit(dispatch_kick)
        return []
    return _end(request, cause=cause, at=at, contact=contact, messages=messages)


def _end(
    request: ReviewRequest, *, cause: str, at: datetime, contact: Contact, messages: list[Message]
) -> list[str]:
    """End the request (unsaved: returns its changed fields) and cancel its unsent messages.
    ``messages``: all of the request's messages, locked in this transaction."""
    if cause == ReviewRequest.Status.SENT:
        to, reason, detail = (
            ReviewRequest.Status.COMPLETED,
            ReviewRequest.EndedReason.SEQUENCE_FINISHED,
            "",
        )
    elif cause == ReviewRequest.Status.FAILED:
        failed = next((m for m in reversed(messages) if m.status == Message.Status.FAILED), None)
        to, reason = ReviewRequest.Status.FAILED, ReviewRequest.EndedReason.DELIVERY_FAILED
        detail = failed.last_error if failed else ""
    elif cause == ReviewRequest.Status.CANCELLED:
        to, reason, detail = (
            ReviewRequest.Status.CANCELLED,
            ReviewRequest.EndedReason.CANCELLED,
            "",
        )
    else:
        to = ReviewRequest.Status.OPTED_OUT
        reason = (
            ReviewRequest.EndedReason.OPTED_OUT
            if any(contact.opted_out_of(c) for c in (Channel.SMS, Channel.EMAIL))
            else ReviewRequest.EndedReason.UNREACHABLE
        )
        detail = "No channel of this request's messages can reach the contact any more."
    changed = request.transition(to, at=at, reason=reason, detail=detail)
    if any(m.status in Message.CANCELLABLE_STATUSES for m in messages):
        # Locked above, and a request's messages are all created with it: when none of them
        # is open, the UPDATE would find nothing.
        request.cancel_open_messages(at=at)
    return changed


def _unreachable_reason(contact: Contact, channel: str) -> str:
    if not contact.address_for(channel):
        return f"not sent: the contact has no {Channel(channel).label} address"
    return f"not sent: the contact opted out of {Channel(channel).label}"
