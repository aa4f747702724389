"""A review request's lifecycle: locking it, and deciding what comes next after each event.

Lock order: every transaction that changes a request and its messages locks the request row
first (the send path, status callbacks, clicks, opt-outs, staff actions), so two of them never
wait for each other in opposite orders. Only the request row is locked: locking the joined
owner would serialise every send of a business on its user row, and the contact would invert
the opt-out's order (contact, then request).

Follow-ups (``review_request_advance``): after a step is sent, the next planned step whose
channel the contact can still receive becomes ``pending`` at the first message's ``sent_at`` +
its offset, moved into the sending window. A request ends ``completed`` when its last step was
sent, ``failed`` when a permanent failure leaves nothing else to send, ``opted_out`` when an
opt-out does, ``clicked``/``cancelled`` at once.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from events.models import EventType

from ..models import BusinessSettings, Channel, Contact, Message, ReviewRequest
from .dispatch import dispatcher_kick
from .events import review_request_ending_record, review_request_event_record

# Messages that may still go out, or whose outcome is still to be reconciled: while one of
# these exists, the request neither plans its next step nor ends.
IN_FLIGHT_STATUSES = frozenset(
    {Message.Status.PENDING, Message.Status.QUEUED, Message.Status.SENDING, Message.Status.UNKNOWN}
)


@dataclass(frozen=True)
class OwnerReads:
    """What a caller already read about a request's owner (a send batch reads it once for all
    its rows): their settings, and the event types they subscribe to
    (``events.services.event_types_subscribed``). A change saved meanwhile applies from the
    caller's next batch on, as if its later rows had been recorded a moment earlier."""

    policy: BusinessSettings
    subscribed: frozenset[str]


def review_request_lock(*, request_id: uuid.UUID | str) -> ReviewRequest:
    """Lock one request (call inside a transaction) and return it with its contact and owner,
    ready for ``review_request_advance(..., locked=True)``."""
    return (
        ReviewRequest.objects.select_for_update(of=("self",))
        .select_related("contact")
        .get(pk=request_id)
    )


def review_request_lock_by_message(
    *, message_id: uuid.UUID | str, load: bool = False
) -> ReviewRequest | None:
    """Lock a message's request before the message itself (call inside a transaction);
    ``None`` when there is no such message. ``load``: with its contact and owner."""
    requests = ReviewRequest.objects.select_for_update(of=("self",)).filter(messages__pk=message_id)
    if load:
        return requests.select_related("contact", "owner").first()
    return requests.only("pk").first()


def review_request_note_sent(
    *,
    request: ReviewRequest,
    at: datetime,
    owner: OwnerReads | None = None,
    messages: list[Message] | None = None,
) -> None:
    """In the transaction that moved one of ``request``'s messages to sent (``request`` locked
    with its contact, as ``review_request_lock`` does): the request is sent, and its next step
    is planned.

    ``owner``: what the caller already read about the request's owner (a send batch).
    ``messages``: all of the request's messages, locked in this transaction after it, in step
    order, when the caller read them already (``db.message_record_sent_rows``)."""
    changed: list[str] = []
    if request.status in (ReviewRequest.Status.SCHEDULED, ReviewRequest.Status.SENDING):
        changed = request.transition(ReviewRequest.Status.SENT, at=at)
        review_request_event_record(
            request=request,
            type=EventType.REVIEW_REQUEST_SENT,
            at=at,
            subscribed=owner.subscribed if owner else None,
        )
    elif request.sent_at is None:
        # Ended (opted out, cancelled) while this message was already with the provider: it
        # still reached the contact, which the cooldown must know.
        request.sent_at = at
        changed = ["sent_at", "updated_at"]
    review_request_advance(
        request=request,
        cause=ReviewRequest.Status.SENT,
        at=at,
        locked=True,
        changed=changed,
        owner=owner,
        messages=messages,
    )


def review_request_advance(
    *,
    request: ReviewRequest,
    cause: str,
    at: datetime,
    bad_channel: str | None = None,
    locked: bool = False,
    changed: Sequence[str] = (),
    owner: OwnerReads | None = None,
    messages: list[Message] | None = None,
) -> None:
    """Decide what comes next for an active request; call inside a transaction.

    ``cause`` is what just happened (``sent``, ``failed``, ``opted_out``, ``cancelled``): it
    names the ending when nothing is left. ``bad_channel``: a permanent failure on this channel
    cancels the request's other unsent messages on it (the address does not work).
    ``locked``: ``request`` was just locked in this transaction with its contact and owner
    (``review_request_lock``), so it is not read again. ``changed``: fields of that locked
    request the caller changed and has not saved yet, saved here with the request's own
    changes in one UPDATE. ``owner``: what the caller already read about the request's owner
    (a send batch), not read again. ``messages``: all of the locked request's messages, locked
    after it in this transaction, in step order, when the caller read them already.
    """
    if changed and not locked:
        raise ValueError("the changed fields of a request that advance reads again are lost")
    # An opt-out that commits after this read waits for the request lock, then advances the
    # request itself with the fresh contact.
    if not locked:
        request = review_request_lock(request_id=request.pk)
    if messages is not None and not locked:
        raise ValueError("messages read before the request was locked may be stale")
    own_changes = _next(
        request, cause=cause, at=at, bad_channel=bad_channel, owner=owner, messages=messages
    )
    fields = [*changed, *own_changes]
    if fields:
        request.save(update_fields=list(dict.fromkeys(fields)))


def _next(
    request: ReviewRequest,
    *,
    cause: str,
    at: datetime,
    bad_channel: str | None,
    owner: OwnerReads | None,
    messages: list[Message] | None,
) -> list[str]:
    """``review_request_advance`` on the locked request; returns the request's changed fields
    (unsaved)."""
    if not request.is_active:
        return []
    contact = request.contact
    if messages is None:
        messages = list(request.messages.select_for_update().order_by("step"))
    for m in messages:
        if m.status in Message.CANCELLABLE_STATUSES and (
            m.channel == bad_channel or not contact.can_receive(m.channel)
        ):
            m.last_error = (
                f"not sent: a message by {Channel(m.channel).label} failed permanently"
                if m.channel == bad_channel
                else contact.unreachable_reason(m.channel)
            )
            m.save(update_fields=[*m.transition(Message.Status.CANCELLED, at=at), "last_error"])
    if any(m.status in IN_FLIGHT_STATUSES for m in messages):
        return []  # a message is due, in flight or waiting to be reconciled
    first = messages[0] if messages else None
    following = next((m for m in messages if m.status == Message.Status.PLANNED), None)
    if first is not None and first.sent_at is not None and following is not None:
        policy = owner.policy if owner else BusinessSettings.for_owner(request.owner)
        following.due_at = (
            policy.at(request.location_id)
            .send_time(
                channel=following.channel,
                requested=first.sent_at + following.planned_offset,
                phone=contact.phone,
            )
            .at
        )
        following.save(
            update_fields=[*following.transition(Message.Status.PENDING, at=at), "due_at"]
        )
        if following.due_at <= timezone.now():
            transaction.on_commit(dispatcher_kick)
        return []
    subscribed = owner.subscribed if owner else None
    return _end(
        request, cause=cause, at=at, contact=contact, messages=messages, subscribed=subscribed
    )


def _end(
    request: ReviewRequest,
    *,
    cause: str,
    at: datetime,
    contact: Contact,
    messages: list[Message],
    subscribed: frozenset[str] | None,
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
    review_request_ending_record(request=request, at=at, subscribed=subscribed)
    if any(m.status in Message.CANCELLABLE_STATUSES for m in messages):
        # Locked above, and a request's messages are all created with it: when none of them
        # is open, the UPDATE would find nothing.
        request.cancel_open_messages(at=at)
    return changed
