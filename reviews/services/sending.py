"""Sending message rows: claim, render, call the channel, record what happened.

``messages_send`` is what a send task runs, for the few rows the dispatcher put in it. For each
row:

1. Claim it: ``queued → sending`` by one conditional statement (``db.message_claim``:
   ``attempts + 1``, the address captured, the request locked first). Nothing claimed:
   another worker claimed it, or this is a redelivered task whose first run already did:
   nothing is sent. This is what makes ``acks_late`` with ``reject_on_worker_lost`` safe: the
   database, not the broker, decides whether a send happens.
2. Check that it may still go out (``Message.refusal``, on a read made after the claim: an
   opt-out, click or cancel that committed after the dispatcher queued it stops it here) or
   must wait (``Message.hold_reason``: the business lists no review site), then
   render it and call the channel outside any transaction.
3. Record the outcome (``outcomes``), guarded by the attempt number the claim gave, so a late
   outcome never overwrites a later attempt.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from django.conf import settings
from django.db import (
    DatabaseError,
    InterfaceError,
    OperationalError,
    close_old_connections,
)
from django.utils import timezone

from accounts.models import User
from core.metrics import MESSAGES, PROVIDER_LATENCY
from events.services import event_types_subscribed
from providers import (
    DeliveryOutcomeUnknown,
    DeliveryRejected,
    OutgoingEmail,
    OutgoingSms,
    Sent,
)
from providers.email import email_channel
from providers.sms import sms_channel

from .. import db, rendering
from ..models import (
    BusinessSettings,
    Channel,
    Message,
    MessageTemplate,
)
from .lifecycle import OwnerReads
from .outcomes import (
    SendResult,
    message_record_cancelled,
    message_record_failure,
    message_record_held,
    message_record_sent,
    message_record_unknown,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass
class SendBatch:
    """What one ``messages_send`` call reads once for all its rows: each owner, their settings
    with their locations (a cache round trip and a model built from it per read), the event
    types they subscribe to (two queries fewer per sent message) and their wording of each
    step at each location (what reading them once saves: docs/benchmarks.md, Optimisations
    kept).
    A batch lasts well under a minute; a change saved meanwhile applies from the next batch
    on, as if the batch's later rows had gone out a moment earlier."""

    reads: dict[uuid.UUID, OwnerReads] = field(default_factory=dict)
    owners: dict[uuid.UUID, User] = field(default_factory=dict)
    templates: dict[tuple[uuid.UUID, uuid.UUID | None, str, int], MessageTemplate | None] = field(
        default_factory=dict
    )

    def reads_for(self, owner: User) -> OwnerReads:
        if owner.pk not in self.reads:
            self.reads[owner.pk] = OwnerReads(
                policy=BusinessSettings.for_owner(owner),
                subscribed=event_types_subscribed(owner_id=owner.pk),
            )
        return self.reads[owner.pk]

    def policy_for(self, owner: User, location_id: uuid.UUID | None) -> BusinessSettings:
        """The owner's policy at a request's location (``BusinessSettings.at``)."""
        return self.reads_for(owner).policy.at(location_id)

    def owner(self, owner_id: uuid.UUID) -> User:
        if owner_id not in self.owners:
            self.owners[owner_id] = User.objects.get(pk=owner_id)
        return self.owners[owner_id]

    def template_for(self, message: Message, policy: BusinessSettings) -> MessageTemplate | None:
        """The owner's wording for the message's channel and step at the location ``policy``
        is at (``None``: the default)."""
        owner_id, location_id = message.review_request.owner_id, policy.location_id
        key = (owner_id, location_id, message.channel, message.step)
        if key not in self.templates:
            self.templates[key] = rendering.owner_template(
                owner_id, message.channel, message.step, location_id
            )
        return self.templates[key]


def message_send(*, message_id: str) -> SendResult:
    """Send one queued message at most once. Idempotent: safe to run twice for one row."""
    return messages_send(message_ids=[message_id])[0]


def messages_send(*, message_ids: Sequence[str]) -> list[SendResult]:
    """Send each row in turn (what one send task carries: a worker pays a task's receive,
    acknowledge and trace cost once for several sends); returns the outcomes so far, in order.

    Runs outside a transaction; each provider call happens between two short transactions.
    Database steps around a call are retried through a short outage; the call never is.

    Each row keeps the single send's guarantees: its own claim, its own provider slot
    (``ProviderSlot``, taken before the claim and given back as soon as the provider
    answered), its own record. A row this run does not get to goes back to pending,
    unclaimed, for the next sweep: when no provider slot came free in time (the provider is
    saturated: the rest of the batch would wait too), when another send could overrun the
    task's soft time limit, or when a send raised (the database stayed away past its retries).
    """
    started = _clock()
    batch = SendBatch()
    results: list[SendResult] = []
    for index, message_id in enumerate(message_ids):
        if index and _clock() - started + _send_worst_case() >= _send_budget():
            _with_db_retry(partial(_unqueue, message_ids[index:]))
            break
        slot = ProviderSlot()
        if not slot.acquire():
            _with_db_retry(partial(_unqueue, message_ids[index:]))
            results.append(SendResult.RETRY)
            break
        try:
            results.append(_send(message_id, slot, batch))
        except BaseException:
            _unqueue_after_error(message_ids[index + 1 :])
            raise
        finally:
            slot.release()
    return results


_clock = time.monotonic  # a batch's own clock (tests move it)


def _send_worst_case() -> float:
    """The longest one more send may take: a wait for a provider slot, then the call."""
    wait = settings.DELIVERY_PROVIDER_WAIT_SECONDS if settings.DELIVERY_PROVIDER_CONCURRENCY else 0
    return float(wait + settings.DELIVERY_CONNECT_TIMEOUT + settings.DELIVERY_READ_TIMEOUT)


def _send_budget() -> float:
    return float(settings.CELERY_TASK_SOFT_TIME_LIMIT)


def _send(message_id: str, slot: ProviderSlot, batch: SendBatch) -> SendResult:
    claimed = _with_db_retry(partial(_claim, message_id, batch))
    if isinstance(claimed, SendResult):
        return claimed  # skipped, or cancelled or held by the pre-send check
    message = claimed
    attempt = message.attempts
    record_failure = partial(message_record_failure, message_id=message_id, attempt=attempt)
    request = message.review_request
    policy = batch.policy_for(request.owner, request.location_id)
    template = batch.template_for(message, policy)
    try:
        outgoing = _with_db_retry(partial(_outgoing, message, policy, template))
    except (DatabaseError, InterfaceError):
        raise
    except Exception as exc:  # a broken template or default file: nothing was sent
        logger.exception("message could not be rendered", extra={"message_id": message_id})
        _with_db_retry(
            partial(
                record_failure,
                permanent=True,
                code="render_error",
                reason=f"could not render the message: {str(exc) or repr(exc)}",
            )
        )
        return SendResult.FAILED
    try:
        provider, deliver = _channel_call(outgoing)
    except Exception as exc:  # our configuration (e.g. an ESP without its key): nothing sent
        logger.exception("channel not usable", extra={"message_id": message_id})
        return _with_db_retry(
            partial(
                record_failure,
                permanent=False,
                code="channel_configuration",
                reason=f"the {message.channel} channel is not usable: {exc}"[:1000],
            )
        )
    labels = (message.channel, provider or "unknown")
    started = time.perf_counter()
    try:
        try:
            sent = deliver()  # the only network call; no transaction open
        finally:
            slot.release()
            PROVIDER_LATENCY.labels(*labels).observe(time.perf_counter() - started)
    except DeliveryRejected as exc:
        MESSAGES.labels(*labels, SendResult.FAILED if exc.permanent else SendResult.RETRY).inc()
        return _with_db_retry(
            partial(
                record_failure,
                permanent=exc.permanent,
                code=exc.code,
                reason=exc.reason,
                retry_after=exc.retry_after,
            )
        )
    except DeliveryOutcomeUnknown as exc:
        MESSAGES.labels(*labels, SendResult.UNKNOWN).inc()
        unknown = partial(message_record_unknown, message_id=message_id, attempt=attempt)
        _with_db_retry(partial(unknown, code=exc.code, reason=exc.reason))
        return SendResult.UNKNOWN
    except Exception as exc:
        # Not a classified outcome (a bug, the time limit hit mid-call): it may have been
        # sent, so it is recorded as unknown, never retried.
        MESSAGES.labels(*labels, SendResult.UNKNOWN).inc()
        logger.exception("unexpected error sending", extra={"message_id": message_id})
        _with_db_retry(
            partial(
                message_record_unknown,
                message_id=message_id,
                attempt=attempt,
                code="unexpected_error",
                reason=f"unexpected error during the provider call: {exc!r}"[:1000],
            )
        )
        return SendResult.UNKNOWN
    MESSAGES.labels(*labels, SendResult.SENT).inc()
    _with_db_retry(
        partial(
            message_record_sent,
            message_id=message_id,
            request_id=message.review_request_id,
            attempt=attempt,
            sent=sent,
            to_address=outgoing.to,
            owner=batch.reads_for(message.review_request.owner),
        )
    )
    return SendResult.SENT


def _claim(message_id: str, batch: SendBatch) -> Message | SendResult:
    """``queued → sending`` (``db.message_claim``, which reads the request and contact as the
    claim leaves them), then the pre-send rule: the claimed message, with its request, contact
    and owner, or the ``SendResult`` saying why nothing is to be sent."""
    message = db.message_claim(message_id=message_id, now=timezone.now())
    if message is None:
        return SendResult.SKIPPED  # claimed by another run, cancelled, or already done
    request = message.review_request
    request.owner = batch.owner(request.owner_id)
    refusal = message.refusal()
    if refusal:
        message_record_cancelled(message_id=message_id, attempt=message.attempts, reason=refusal)
        return SendResult.CANCELLED
    policy = batch.policy_for(request.owner, request.location_id)
    hold = message.hold_reason(has_review_site=policy.has_review_site)
    if hold:
        message_record_held(message_id=message_id, attempt=message.attempts, reason=hold)
        return SendResult.HELD
    return message


def _channel_call(outgoing: OutgoingSms | OutgoingEmail) -> tuple[str, Callable[[], Sent]]:
    """The provider's name (``""`` when the channel names none) and the call sending
    ``outgoing`` through the channel the settings select for its kind."""
    if isinstance(outgoing, OutgoingSms):
        sms = sms_channel()
        return str(getattr(sms, "provider", "")), partial(sms.send, outgoing)
    email = email_channel()
    return str(getattr(email, "provider", "")), partial(email.send, outgoing)


def _outgoing(
    message: Message, policy: BusinessSettings, template: MessageTemplate | None
) -> OutgoingSms | OutgoingEmail:
    address = message.to_address  # captured by the claim
    if message.channel == Channel.SMS:
        return OutgoingSms(
            message_id=str(message.pk),
            to=address,
            body=rendering.render_sms(message, policy, template=template),
            status_callback=f"{settings.SITE_URL}/webhooks/twilio/status/{message.pk}/",
        )
    rendered = rendering.render_email(message, policy, template=template)
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


def _unqueue(message_ids: Sequence[str]) -> None:
    """Queued rows this run did not claim go back to pending (nothing was sent): the next
    sweep dispatches them again, sooner than their queued lease would."""
    now = timezone.now()
    Message.objects.filter(pk__in=list(message_ids), status=Message.Status.QUEUED).update(
        status=Message.Status.PENDING, updated_at=now
    )


def _unqueue_after_error(message_ids: Sequence[str]) -> None:
    if not message_ids:
        return
    try:
        _unqueue(message_ids)
    except Exception:
        logger.warning(
            "could not put unsent rows back to pending; their queued lease will",
            extra={"count": len(message_ids)},
            exc_info=True,
        )


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


_slots_lock = threading.Lock()
_slots: dict[int, threading.BoundedSemaphore] = {}


class ProviderSlot:
    """One of this process's ``DELIVERY_PROVIDER_CONCURRENCY`` provider slots, for one send.

    A threaded worker can run more send tasks than it lets call the provider at once: the
    spare threads record outcomes and start the next tasks while the slots are with the
    provider, so a slot goes from one call to the next instead of idling through the database
    work around each send (and a burst never exceeds the provider's own concurrency limit).
    ``0``: no cap, the thread count is the cap. The slot is taken before the claim, so a row is
    ``sending`` only while its send is about to call, or calling, the provider.
    """

    def __init__(self) -> None:
        size = settings.DELIVERY_PROVIDER_CONCURRENCY
        self.semaphore = None
        if size > 0:
            with _slots_lock:
                self.semaphore = _slots.setdefault(size, threading.BoundedSemaphore(size))
        self.held = False

    def acquire(self) -> bool:
        """Wait up to ``DELIVERY_PROVIDER_WAIT_SECONDS`` for a slot; ``False`` if none came."""
        if self.semaphore is None:
            return True
        self.held = self.semaphore.acquire(timeout=settings.DELIVERY_PROVIDER_WAIT_SECONDS)
        if not self.held:
            logger.warning(
                "no provider slot came free in time; the message goes back to pending",
                extra={"slots": settings.DELIVERY_PROVIDER_CONCURRENCY},
            )
        return self.held

    def release(self) -> None:
        """Give the slot back (once; later calls do nothing)."""
        if self.held and self.semaphore is not None:
            self.held = False
            self.semaphore.release()
