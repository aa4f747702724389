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
   landed after the dispatcher queued the row stops it), and render. A send task with several
   rows reads and renders them all ahead, in one statement, before its first provider slot is
   taken; each of those rows is then claimed by an UPDATE that makes the same check itself
   (request active, contact reachable on the channel) and reads nothing (``_read_ahead``).
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

import functools
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TypeVar

from django.conf import settings
from django.db import (
    DEFAULT_DB_ALIAS,
    DatabaseError,
    InterfaceError,
    OperationalError,
    close_old_connections,
    connection,
    connections,
    transaction,
)
from django.utils import timezone

from accounts.models import User

from .. import rendering, rows
from ..channels import (
    DeliveryOutcomeUnknown,
    DeliveryRejected,
    OutgoingEmail,
    OutgoingSms,
    Sent,
)
from ..channels.email import email_channel
from ..channels.sms import UNSUBSCRIBED_CODE, sms_channel
from ..models import BusinessSettings, Channel, Contact, Message, MessageTemplate, ReviewRequest

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

    Where the process caps its provider calls (``ProviderSlot``), a slot is taken before the
    claim and given back as soon as the provider answered: recording the outcome and picking
    up the next task happen while another send holds it. A send that gets no slot in time
    puts its row back to pending, unclaimed, for the dispatcher's next sweep.
    """
    return send_messages(message_ids=[message_id])[0]


def send_messages(*, message_ids: Sequence[str]) -> list[str]:
    """``send_message`` for each row in turn (what one send task carries: the dispatcher
    groups rows so that a worker pays a task's receive/acknowledge/trace cost once for
    several sends); returns the outcomes sent so far, in order.

    Each row keeps the single send's guarantees: its own claim, its own provider slot, its own
    record. The rows are read and rendered ahead, all in one statement, outside the slots
    (``_read_ahead``): a slot then holds a claim that only writes, and the call. A row this
    run does not get to goes back to pending, unclaimed, for the next sweep: when no provider
    slot came free in time (the provider is saturated: the rest of the batch would wait too),
    when another send could overrun the task's soft time limit (the sends before it were
    slow), or when a send raised (the database stayed away past its retries). A redelivered
    batch (``acks_late``) skips every row the first run claimed. Each owner's settings (the
    wording's sender, address, defaults) are read once per batch.
    """
    started = _clock()
    results: list[str] = []
    _batch.settings, _batch.ready, _batch.read_at = {}, {}, None
    try:
        _send_each(message_ids, started, results)
    finally:
        _batch.settings, _batch.ready, _batch.read_at = None, None, None
    return results


def _send_each(message_ids: Sequence[str], started: float, results: list[str]) -> None:
    for index, message_id in enumerate(message_ids):
        if index and _clock() - started + _send_worst_case() >= _send_budget():
            _with_db_retry(partial(_unqueue, message_ids[index:]))
            break
        if len(message_ids) > 1:
            _read_ahead(message_ids[index:])
        slot = ProviderSlot()
        if not slot.acquire():
            _with_db_retry(partial(_unqueue, message_ids[index:]))
            results.append(SendResult.RETRY)
            break
        try:
            results.append(_send(message_id, slot))
        except BaseException:
            rest = message_ids[index + 1 :]
            if rest:
                try:
                    _unqueue(rest)
                except Exception:
                    logger.warning(
                        "could not put unsent rows back to pending; their queued lease will",
                        extra={"count": len(rest)},
                        exc_info=True,
                    )
            raise
        finally:
            slot.release()


_clock = time.monotonic  # a batch's own clock (tests move it)
_batch = threading.local()  # what one send_messages call reads once for all its rows


def _settings_for(owner: User) -> BusinessSettings:
    """The owner's settings (wording, sending window for a follow-up or a retry), read once
    per send batch: each read is a cache round trip and a model built from it, ~10 % of a
    worker's CPU in a drain. A batch lasts well under a second; a change saved meanwhile
    applies from the next batch on, as if the batch's later rows had gone out a moment
    earlier. Outside a batch (status callbacks, staff actions): read every time."""
    memo = getattr(_batch, "settings", None)
    if memo is None:
        return BusinessSettings.for_owner(owner)
    policy = memo.get(owner.pk)
    if policy is None:
        policy = memo[owner.pk] = BusinessSettings.for_owner(owner)
    return policy


def _send_worst_case() -> float:
    """The longest one more send may take: a wait for a provider slot, then the call."""
    wait = settings.DELIVERY_PROVIDER_WAIT_SECONDS if settings.DELIVERY_PROVIDER_CONCURRENCY else 0
    return wait + settings.DELIVERY_CONNECT_TIMEOUT + settings.DELIVERY_READ_TIMEOUT


def _send_budget() -> float:
    return float(settings.CELERY_TASK_SOFT_TIME_LIMIT)


def _send(message_id: str, slot: ProviderSlot) -> str:
    claimed = _claim_and_prepare(message_id)
    if claimed is None:
        return SendResult.SKIPPED  # claimed by another run, cancelled, or already done
    message, prepared = claimed
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
        try:
            sent = channel.send(prepared.outgoing)  # the only network call; no transaction open
        finally:
            slot.release()
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
        if self.held:
            self.held = False
            self.semaphore.release()


# How old a batch's read-ahead may be when its row's slot is taken; older, the row is read
# again (by the read-ahead before the slot, or by the claim itself).
READ_AHEAD_MAX_AGE = 1.0


def _read_ahead(message_ids: Sequence[str]) -> None:
    """Read and render the batch's remaining rows before a provider slot is taken: one
    statement for all of them (the claim's read, for several rows), again only once the last
    read is ``READ_AHEAD_MAX_AGE`` old. A row read here is then claimed by a statement that
    only claims (``_claim_ready``), so a slot holds the claim's writes and the call, not the
    read, the models built from it and the rendering.

    Only what may go out is kept: a row that is not queued, cannot be rendered or is blocked
    goes through the single send's claim, which reads it again and records why. A failed read
    keeps nothing either (the claims then read for themselves, with their retries)."""
    if _read_ahead_fresh():
        return
    _batch.read_at = time.monotonic()
    _batch.ready = {}
    try:
        (found,) = rows.run([_read_ahead_statement(message_ids)])
    except (DatabaseError, InterfaceError):
        logger.warning("could not read a send batch ahead", exc_info=True)
        return
    for row in found:
        message, template = _claimed_row(row)
        message.to_address = message.review_request.contact.address_for(message.channel)
        if _blocked_reason(message):
            continue
        try:
            outgoing = _outgoing(message, _settings_for(message.review_request.owner), template)
        except Exception:  # rendered again, and the error recorded, by the single claim
            continue
        _batch.ready[str(message.pk)] = (message, _Prepared(outgoing=outgoing))


def _read_ahead_fresh() -> bool:
    """Whether this batch has a read ahead younger than ``READ_AHEAD_MAX_AGE``."""
    read_at = getattr(_batch, "read_at", None)
    return read_at is not None and time.monotonic() - read_at < READ_AHEAD_MAX_AGE


def _read_ahead_statement(message_ids: Sequence[str]) -> tuple[str, list]:
    db = connections[DEFAULT_DB_ALIAS]
    placeholders = ", ".join(["%s"] * len(message_ids))
    return (
        f"{_claim_read()} WHERE m.id IN ({placeholders}) AND m.status = '{Message.Status.QUEUED}'",
        [Message._meta.pk.get_db_prep_value(pk, db) for pk in message_ids],
    )


def _claim_and_prepare(message_id: str) -> tuple[Message, _Prepared] | None:
    """Claim the row; the claimed message and what to send (or why not); ``None`` when there
    is nothing to claim.

    A row the batch read ahead (and no older than ``READ_AHEAD_MAX_AGE``) is claimed by
    ``_claim_ready``, whose UPDATE also checks, in the same statement, what the claim's read
    is there to check: the request is still active and the contact can still receive the
    channel. Its address is captured by the claim as always; one that changed since the read
    ahead is read and rendered again. Any other row (a single send, a stale read, one the
    check stops) takes ``_claim``: the claim and the read in one round trip, as before."""
    ready = (getattr(_batch, "ready", None) or {}).pop(message_id, None)
    claimed = None
    if ready is not None and _read_ahead_fresh():
        claimed = _with_db_retry(lambda: _claim_ready(message_id))
    if claimed is not None:
        message, prepared = ready
        message.status = Message.Status.SENDING
        message.attempts, message.to_address, message.sending_at = claimed
        message.updated_at = message.sending_at
        if message.to_address == prepared.outgoing.to:
            return message, prepared
        read = _with_db_retry(lambda: _read_claimed(message_id))  # None: gone since the claim
    else:
        read = _with_db_retry(lambda: _claim(message_id))
    if read is None:
        return None
    message, template = read
    return message, _with_db_retry(lambda: _prepare(message, template))


def _claim_ready(message_id: str) -> tuple[int, str, datetime] | None:
    """``_claim`` without its read, for a row read ahead: lock the request, claim the row if it
    is queued and may still go out (request active, contact reachable on the channel), start
    the request. One round trip; the new attempt number, the captured address and the claim's
    time, or ``None`` when nothing was claimed (then ``_claim`` tells why)."""
    now = timezone.now()
    statements, _ = _claim_statements(message_id, _claim_ready_sql(), now)
    _, claimed, _ = rows.run(statements, atomic=True)
    if not claimed:
        return None
    attempts, to_address = claimed[0]
    return attempts, to_address, now


@functools.cache
def _claim_ready_sql() -> str:
    """The claim's UPDATE, only for a row that may still go out: what ``_blocked_reason``
    checks on the claim's read (``ReviewRequest.is_active``, ``Contact.can_receive``)."""
    m, r, c = (
        connection.ops.quote_name(model._meta.db_table)
        for model in (Message, ReviewRequest, Contact)
    )
    active = ", ".join(f"'{status}'" for status in sorted(ReviewRequest.ACTIVE_STATUSES))
    return _claim_update(
        f" AND EXISTS (SELECT 1 FROM {r} r JOIN {c} c ON c.id = r.contact_id "
        f"WHERE r.id = {m}.review_request_id AND r.status IN ({active}) "
        f"AND CASE WHEN {m}.channel = '{Channel.SMS}' "
        "THEN c.phone <> '' AND c.sms_opted_out_at IS NULL "
        "ELSE c.email <> '' AND c.email_opted_out_at IS NULL END)",
        "attempts, to_address",
    )


def _read_claimed(message_id: str) -> tuple[Message, MessageTemplate | None] | None:
    """The claim's read alone, for a row this run has claimed; ``None`` if it is gone."""
    pk = Message._meta.pk.get_db_prep_value(message_id, connections[DEFAULT_DB_ALIAS])
    (found,) = rows.run([(_claim_sql()[3], [pk])])
    return _claimed_row(found[0]) if found else None


def _unqueue(message_ids: Sequence[str]) -> None:
    """Queued rows this run did not claim go back to pending (nothing was sent): the next
    sweep dispatches them again, sooner than their queued lease would."""
    now = timezone.now()
    Message.objects.filter(pk__in=list(message_ids), status=Message.Status.QUEUED).update(
        status=Message.Status.PENDING, updated_at=now
    )


def _claim(message_id: str) -> tuple[Message, MessageTemplate | None] | None:
    """``queued → sending``: the claimed row with its request, contact and owner, and the
    owner's template for its step and channel; ``None`` when there is nothing to claim
    (another run got it, it was cancelled, or it is gone).

    Four statements, one transaction, one round trip on PostgreSQL (``reviews.rows.run``;
    written once, not compiled per send): lock the message's request (request before message,
    the lock order of every transaction that changes both); the claim, a conditional UPDATE
    that also captures the address (reconciling an unknown outcome looks it up); the first
    step's request ``scheduled → sending``, only if this claim happened (so a claim that finds
    nothing changes nothing); the read of everything the send needs.
    """
    statements, pk = _claim_statements(message_id, _claim_sql()[1], timezone.now())
    _, claimed, _, read = rows.run([*statements, (_claim_sql()[3], [pk])], atomic=True)
    if not claimed or not read:
        return None
    return _claimed_row(read[0])


def _claim_statements(message_id: str, claim_sql: str, now: datetime) -> tuple[list, Any]:
    """The claim's first three statements with their values (lock the request, ``claim_sql``,
    start the request), and the message's primary key as the database takes it."""
    db = connections[DEFAULT_DB_ALIAS]
    pk = Message._meta.pk.get_db_prep_value(message_id, db)
    at = Message._meta.get_field("sending_at").get_db_prep_value(now, db)
    lock_sql, _, start_sql, _ = _claim_sql()
    return [(lock_sql, [pk]), (claim_sql, [at, at, pk]), (start_sql, [at, at, pk, at])], pk


@functools.cache
def _claim_sql() -> tuple[str, str, str, str]:
    m, r = (connection.ops.quote_name(model._meta.db_table) for model in (Message, ReviewRequest))
    sending = Message.Status.SENDING
    lock = f"SELECT 1 FROM {r} WHERE id = (SELECT review_request_id FROM {m} WHERE id = %s)" + (
        " FOR UPDATE" if connection.features.has_select_for_update else ""
    )
    start = (
        f"UPDATE {r} SET status = '{ReviewRequest.Status.SENDING}', "
        "sending_at = COALESCE(sending_at, %s), updated_at = %s "
        f"WHERE status = '{ReviewRequest.Status.SCHEDULED}' AND id = (SELECT review_request_id "
        f"FROM {m} WHERE id = %s AND step = 0 AND status = '{sending}' AND sending_at = %s)"
    )
    return lock, _claim_update("", "id"), start, f"{_claim_read()} WHERE m.id = %s"


def _claim_update(condition: str, returning: str) -> str:
    """The claim's conditional UPDATE (``queued → sending``, the address captured), with
    ``condition`` added to its WHERE, returning ``returning``."""
    m, r, c = (
        connection.ops.quote_name(model._meta.db_table)
        for model in (Message, ReviewRequest, Contact)
    )
    return (
        f"UPDATE {m} SET status = '{Message.Status.SENDING}', sending_at = %s, updated_at = %s, "
        "attempts = attempts + 1, to_address = COALESCE((SELECT CASE WHEN "
        f"{m}.channel = '{Channel.SMS}' THEN c.phone ELSE c.email END FROM {r} r JOIN {c} c "
        f"ON c.id = r.contact_id WHERE r.id = {m}.review_request_id), '') "
        f"WHERE id = %s AND status = '{Message.Status.QUEUED}'{condition} RETURNING {returning}"
    )


@functools.cache
def _claim_read() -> str:
    """The claim's read without its WHERE: a message (``m``), its request, contact and owner,
    and the owner's template for its step and channel."""
    m, r, c, u, t = (
        connection.ops.quote_name(model._meta.db_table)
        for model in (Message, ReviewRequest, Contact, User, MessageTemplate)
    )
    return (
        f"SELECT {rows.columns(Message, 'm')}, {rows.columns(ReviewRequest, 'r')}, "
        f"{rows.columns(Contact, 'c')}, {rows.columns(User, 'u')}, "
        f"{rows.columns(MessageTemplate, 't')} "
        f"FROM {m} m JOIN {r} r ON r.id = m.review_request_id "
        f"JOIN {c} c ON c.id = r.contact_id JOIN {u} u ON u.id = r.owner_id "
        f"LEFT JOIN {t} t ON t.owner_id = r.owner_id AND t.channel = m.channel "
        "AND t.step = m.step"
    )


def _claimed_row(row: tuple) -> tuple[Message, MessageTemplate | None]:
    """The claim's read: the message, its request with contact and owner, the template."""
    offset = 0
    loaded = []
    for model in (Message, ReviewRequest, Contact, User):
        loaded.append(rows.load(model, row, offset))
        offset += rows.width(model)
    message, request, contact, owner = loaded
    request.contact, request.owner = contact, owner
    message.review_request = request
    return message, rows.load_optional(MessageTemplate, row, offset)


@dataclass
class _Prepared:
    outgoing: OutgoingSms | OutgoingEmail | None = None
    render_error: str = ""
    blocked: str = ""


def _prepare(message: Message, template: MessageTemplate | None) -> _Prepared:
    """Render the claimed row (``template``: the owner's for its step, read by the claim) and
    check that it may go out."""
    prepared = _Prepared()
    policy = _settings_for(message.review_request.owner)
    try:
        prepared.outgoing = _outgoing(message, policy, template)
    except (DatabaseError, InterfaceError):
        raise
    except Exception as exc:  # a broken template or default file: nothing was sent
        logger.exception("message could not be rendered", extra={"message_id": str(message.pk)})
        prepared.render_error = str(exc) or repr(exc)
        return prepared
    prepared.blocked = _blocked_reason(message)
    return prepared


def _outgoing(message: Message, policy: BusinessSettings, template: MessageTemplate | None):
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
    pk = ReviewRequest._meta.pk.get_db_prep_value(request_id, connections[DEFAULT_DB_ALIAS])
    (found,) = rows.run([(_locked_request_sql(), [pk])])
    if not found:
        raise ReviewRequest.DoesNotExist(f"no review request {request_id}")
    return _locked_request_row(found[0])


def _recordable(message_id: str, attempt: int):
    return Message.objects.filter(pk=message_id, attempts=attempt, status__in=_RECORDABLE)


def record_sent(*, message_id: str, request_id, attempt: int, sent: Sent, to_address: str) -> str:
    """The provider accepted the message: ``sent``, then its request moves on (``advance``).

    One transaction; its three statements go in one round trip (``reviews.rows``; written
    once, not compiled per send): lock the request (with its contact and owner: ``advance``
    needs them), record the outcome (guarded by the attempt, so a late outcome never
    overwrites a later attempt), lock and read the request's messages for ``advance``.
    """
    now = timezone.now()
    db = connections[DEFAULT_DB_ALIAS]
    request_pk = ReviewRequest._meta.pk.get_db_prep_value(request_id, db)
    at = Message._meta.get_field("sent_at").get_db_prep_value(now, db)
    lock_sql, record_sql, messages_sql = _record_sent_sql()
    with transaction.atomic():
        locked, recorded, messages = rows.run(
            [
                (lock_sql, [request_pk]),
                (
                    record_sql,
                    [
                        at,
                        at,
                        sent.provider,
                        sent.provider_message_id,
                        to_address,
                        Message._meta.pk.get_db_prep_value(message_id, db),
                        attempt,
                    ],
                ),
                (messages_sql, [request_pk]),
            ]
        )
        if not recorded or not locked:
            # A status callback recorded it first (same SID), or staff moved the row on.
            current = Message.objects.filter(pk=message_id).values_list(
                "status", "provider_message_id"
            )
            logger.info(
                "send outcome already recorded",
                extra={"message_id": message_id, "current": list(current)},
            )
            return SendResult.SENT
        request = _locked_request_row(locked[0])
        _request_sent(request, at=now, messages=[rows.load(Message, row) for row in messages])
    return SendResult.SENT


@functools.cache
def _record_sent_sql() -> tuple[str, str, str]:
    m = connection.ops.quote_name(Message._meta.db_table)
    recordable = ", ".join(f"'{status}'" for status in _RECORDABLE)
    for_update = connection.features.has_select_for_update
    return (
        _locked_request_sql(),
        f"UPDATE {m} SET status = '{Message.Status.SENT}', sent_at = %s, updated_at = %s, "
        "provider = %s, provider_message_id = %s, to_address = %s, last_error = '', "
        f"last_error_code = '' WHERE id = %s AND attempts = %s AND status IN ({recordable}) "
        "RETURNING id",
        f"SELECT {rows.columns(Message, m)} FROM {m} WHERE review_request_id = %s "
        "ORDER BY step" + (" FOR UPDATE" if for_update else ""),
    )


@functools.cache
def _locked_request_sql() -> str:
    """``lock_request``'s statement: the request locked (only its row), with contact, owner."""
    r, c, u = (
        connection.ops.quote_name(model._meta.db_table) for model in (ReviewRequest, Contact, User)
    )
    return (
        f"SELECT {rows.columns(ReviewRequest, 'r')}, {rows.columns(Contact, 'c')}, "
        f"{rows.columns(User, 'u')} FROM {r} r JOIN {c} c ON c.id = r.contact_id "
        f"JOIN {u} u ON u.id = r.owner_id WHERE r.id = %s"
        + (" FOR UPDATE OF r" if connection.features.has_select_for_update_of else "")
    )


def _locked_request_row(row: tuple) -> ReviewRequest:
    request = rows.load(ReviewRequest, row)
    offset = rows.width(ReviewRequest)
    request.contact = rows.load(Contact, row, offset)
    request.owner = rows.load(User, row, offset + rows.width(Contact))
    return request


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
    policy = _settings_for(request.owner)
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


def _request_sent(
    request: ReviewRequest, *, at: datetime, messages: list[Message] | None = None
) -> None:
    """``after_sent`` for a request already locked and loaded with its contact and owner
    (``messages``: its messages, locked and read in this transaction, if the caller has)."""
    changed: list[str] = []
    if request.status in (ReviewRequest.Status.SCHEDULED, ReviewRequest.Status.SENDING):
        changed = request.transition(ReviewRequest.Status.SENT, at=at)
    elif request.sent_at is None:
        # Ended (opted out, cancelled) while this message was already with the provider: it
        # still reached the contact, which the cooldown must know.
        request.sent_at = at
        changed = ["sent_at", "updated_at"]
    # Saved by advance with its own changes (a last step's "completed"): one UPDATE.
    advance(
        request,
        cause=ReviewRequest.Status.SENT,
        at=at,
        locked=True,
        changed=changed,
        messages=messages,
    )


def advance(
    request: ReviewRequest,
    *,
    cause: str,
    at: datetime,
    bad_channel: str | None = None,
    locked: bool = False,
    changed: Sequence[str] = (),
    messages: list[Message] | None = None,
) -> None:
    """Decide what comes next for an active request; call inside a transaction.

    ``cause`` is what just happened (``sent``, ``failed``, ``opted_out``, ``cancelled``): it
    names the ending when nothing is left. ``bad_channel``: a permanent failure on this channel
    cancels the request's other unsent messages on it (the address does not work).
    ``locked``: ``request`` was just selected for update in this transaction, with its contact
    and owner (the send path), so it is not read again. ``changed``: fields of that locked
    request its caller changed and has not saved yet; saved with the request's own changes
    here, in one UPDATE. ``messages``: the locked request's messages in step order, already
    locked and read in this transaction (``record_sent``), so not read again.
    """
    if (changed or messages is not None) and not locked:
        raise ValueError("changed fields or messages of a request advance reads again")
    # An opt-out that commits after this read waits for the request lock, then runs
    # ``advance`` itself with the fresh contact.
    if not locked:
        request = lock_request(request.pk)
    fields = [
        *changed,
        *_advance(request, cause=cause, at=at, bad_channel=bad_channel, messages=messages),
    ]
    if fields:
        rows.update(request, list(dict.fromkeys(fields)))


def _advance(
    request: ReviewRequest,
    *,
    cause: str,
    at: datetime,
    bad_channel: str | None,
    messages: list[Message] | None,
) -> list[str]:
    """``advance`` on the locked request; returns the request's fields it changed (unsaved)."""
    if not request.is_active:
        return []
    contact = request.contact
    if messages is None:
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
            rows.update(m, [*m.transition(Message.Status.CANCELLED, at=at), "last_error"])
    if any(m.status in _IN_FLIGHT for m in messages):
        return []  # a message is due, in flight or waiting to be reconciled
    first = messages[0] if messages else None
    following = next((m for m in messages if m.status == Message.Status.PLANNED), None)
    if first is not None and first.sent_at is not None and following is not None:
        policy = _settings_for(request.owner)
        due = policy.send_time(
            channel=following.channel,
            requested=first.sent_at + following.planned_offset,
            phone=contact.phone,
        ).at
        following.due_at = due
        rows.update(following, [*following.transition(Message.Status.PENDING, at=at), "due_at"])
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
