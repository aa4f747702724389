"""Events and webhook delivery: recording (the outbox), subscriptions, and the delivery loop.

``event_record`` runs inside the caller's transaction: the event and one delivery row per
active subscription of that owner and type commit with the change they report, or not at all.
After commit a task is kicked; beat runs the same task every minute as the safety net.

Delivery (``webhooks_deliver_due``), one row at a time, each in three steps:

1. claim (one short transaction): the oldest due ``pending`` row, locked with SKIP LOCKED on
   PostgreSQL, gets ``attempts + 1`` and ``next_attempt_at`` pushed ``WEBHOOK_LEASE_SECONDS``
   ahead: a worker killed during the call leaves the row due again after the lease (at least
   once; receivers dedupe by ``webhook-id``);
2. the call, outside any transaction: target checked again, signed POST to the address just
   checked, no redirects, bounded time (in all) and body read (``events.sender``);
3. the outcome (guarded by the attempt number): 2xx → ``delivered``; 410 → the subscription is
   removed; anything else → retried with exponential backoff and jitter until the row is
   ``WEBHOOK_RETRY_HOURS`` old (then ``failed``). A subscription failing without a success for
   ``WEBHOOK_DISABLE_AFTER_DAYS`` is disabled, and its pending rows fail.
"""

from __future__ import annotations

import enum
import json
import logging
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.access import access_for, reaches
from accounts.models import Location, User
from core.metrics import WEBHOOK_DELIVERIES
from core.times import iso_utc

from . import sender
from .models import Event, EventType, WebhookDelivery, WebhookSubscription
from .signing import secret_new, signed_headers
from .targets import UnsafeTarget, target_url_check

logger = logging.getLogger(__name__)

DELIVER_TASK = "events.tasks.deliver_webhooks"
USER_AGENT = "ReviewRequests-Webhooks/1"
MAX_SUBSCRIPTIONS_PER_OWNER = 100


# --- Recording ------------------------------------------------------------------------------------


def event_record(
    *,
    owner_id: uuid.UUID,
    type: str,
    data: dict[str, Any] | Callable[[], dict[str, Any]],
    occurred_at: datetime | None = None,
    location_id: uuid.UUID | Callable[[], uuid.UUID | None] | None = None,
) -> Event | None:
    """Record an event for ``owner_id`` in the current transaction (required), with a
    delivery row per active subscription to ``type`` that wants it: the event's location
    (``location_id``; ``None``: the account's default location) must be the subscription's
    location when it names one, and one its subscriber reaches when a member subscribed
    (``accounts.access``); a function returning it is called only when a subscription
    filters on locations. Returns the event, or ``None`` when no subscription wants it
    (nothing is written: nobody could receive it).

    ``data``: JSON-ready, or a function returning it, called only when the event is written
    (the state changes of a business nobody subscribed for pay one indexed read)."""
    if not connection.in_atomic_block:
        raise RuntimeError("event_record runs in the transaction of the change it reports")
    type = EventType(type)
    rows: list[tuple[uuid.UUID, uuid.UUID | None, uuid.UUID | None]] = list(
        _active_subscriptions(owner_id)
        .filter(event=type)
        .values_list("pk", "location_id", "subscriber_id")
    )
    if any(location or subscriber for _, location, subscriber in rows):
        rows = _wanting(rows, owner_id=owner_id, location_id=location_id)
    subscriptions = [pk for pk, _, _ in rows]
    if not subscriptions:
        return None
    now = timezone.now()
    event = Event.objects.create(
        owner_id=owner_id,
        type=type,
        occurred_at=occurred_at or now,
        data=data() if callable(data) else data,
    )
    WebhookDelivery.objects.bulk_create(
        WebhookDelivery(event=event, subscription_id=pk, next_attempt_at=now)
        for pk in subscriptions
    )
    transaction.on_commit(webhooks_kick)
    return event


def _wanting(
    rows: list[tuple[uuid.UUID, uuid.UUID | None, uuid.UUID | None]],
    *,
    owner_id: uuid.UUID,
    location_id: uuid.UUID | Callable[[], uuid.UUID | None] | None,
) -> list[tuple[uuid.UUID, uuid.UUID | None, uuid.UUID | None]]:
    """The subscriptions (pk, location, subscriber) that receive an event at ``location_id``
    (``None``: the account's default location)."""
    at = location_id() if callable(location_id) else location_id
    if at is None:
        at = (
            Location.objects.filter(account_id=owner_id)
            .order_by("position", "created_at")
            .values_list("pk", flat=True)
            .first()
        )
    subscribers = {subscriber for _, _, subscriber in rows if subscriber is not None}
    reached = {
        user.pk: reaches(access_for(user), at)
        for user in User.objects.filter(pk__in=subscribers).select_related("account")
    }
    return [
        (pk, location, subscriber)
        for pk, location, subscriber in rows
        if (location is None or location == at)
        and (subscriber is None or reached.get(subscriber, False))
    ]


def event_types_subscribed(*, owner_id: uuid.UUID) -> frozenset[str]:
    """The event types ``owner_id`` has an active subscription to: what ``event_record`` would
    write for now. A caller recording many events of one owner in a short while (a send batch)
    reads this once and skips ``event_record`` for the types not in it."""
    return frozenset(_active_subscriptions(owner_id).values_list("event", flat=True))


def _active_subscriptions(owner_id: uuid.UUID) -> QuerySet[WebhookSubscription]:
    return WebhookSubscription.objects.filter(owner_id=owner_id, disabled_at__isnull=True)


def event_body(event: Event) -> dict[str, Any]:
    """What a receiver gets: ``{id, type, occurred_at, data}``."""
    return {
        "id": str(event.id),
        "type": event.type,
        "occurred_at": iso_utc(event.occurred_at),
        "data": event.data,
    }


def webhooks_kick() -> None:
    """Ask a worker to deliver now (after commit). Latency only: never raises, beat's run
    every minute delivers anyway."""
    try:
        current_app.send_task(DELIVER_TASK, retry=False, expires=60)
    except Exception:
        logger.warning("webhook kick not published; beat's run will deliver", exc_info=True)


# --- Subscriptions ------------------------------------------------------------------------------


class SubscriptionRefused(ValueError):
    """The subscription cannot be made; the message says why, ``field`` which input (``event``,
    ``target_url``; empty for a limit of the account)."""

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.field = field


def webhook_subscription_create(
    *,
    owner: Any,
    event: str,
    target_url: str,
    subscriber: Any = None,
    location_id: uuid.UUID | None = None,
) -> WebhookSubscription:
    """Subscribe ``target_url`` to ``event`` for ``owner`` (the account): the URL is checked
    (scheme and resolved addresses) first. ``subscriber``: the member who subscribes (their
    locations' events only; ``None``: the owner); ``location_id``: only that location's
    events (the caller checked that the subscriber reaches it). Raises
    ``SubscriptionRefused``. The secret is on the returned row; it is shown to the caller
    once."""
    if event not in EventType.values:
        raise SubscriptionRefused(f"Must be one of: {', '.join(EventType.values)}.", field="event")
    try:
        target_url_check(target_url)
    except UnsafeTarget as exc:
        raise SubscriptionRefused(str(exc), field="target_url") from None
    with transaction.atomic():
        if WebhookSubscription.objects.filter(owner=owner).count() >= MAX_SUBSCRIPTIONS_PER_OWNER:
            raise SubscriptionRefused(
                f"At most {MAX_SUBSCRIPTIONS_PER_OWNER} subscriptions per account; delete one "
                "first."
            )
        return WebhookSubscription.objects.create(
            owner=owner,
            subscriber=subscriber,
            location_id=location_id,
            event=event,
            target_url=target_url,
            secret=secret_new(),
        )


def webhook_subscription_delete(*, owner: Any, subscription_id: Any) -> bool:
    """Unsubscribe (its pending deliveries go with it). False when ``owner`` has no such
    subscription."""
    try:
        uuid.UUID(str(subscription_id))
    except ValueError:
        return False
    deleted, _ = WebhookSubscription.objects.filter(owner=owner, pk=subscription_id).delete()
    return bool(deleted)


def webhook_deliveries_redeliver(*, delivery_ids: list[Any]) -> int:
    """Staff: send these deliveries again now (whatever their status) to subscriptions that are
    still active. Returns how many were queued."""
    now = timezone.now()
    with transaction.atomic():
        count = WebhookDelivery.objects.filter(
            pk__in=delivery_ids, subscription__disabled_at__isnull=True
        ).update(status=WebhookDelivery.Status.PENDING, next_attempt_at=now, delivered_at=None)
        if count:
            transaction.on_commit(webhooks_kick)
    return count


def events_purge(*, now: datetime | None = None) -> int:
    """Delete events older than ``WEBHOOK_EVENT_RETENTION_DAYS`` with their deliveries, except
    those still being retried (daily, from beat). Returns how many events went."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=settings.WEBHOOK_EVENT_RETENTION_DAYS)
    pending = WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING)
    _, per_model = (
        Event.objects.filter(occurred_at__lt=cutoff)
        .exclude(pk__in=pending.values("event_id"))
        .delete()
    )
    return per_model.get("events.Event", 0)


# --- Delivery -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CallOutcome:
    status_code: int | None  # None: no HTTP answer (refused target, timeout, connection error)
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


class DeliveryResult(enum.StrEnum):
    """What one delivery attempt's record did: the ``DeliveryReport`` field it counts under,
    and the ``rr_webhook_deliveries`` label."""

    DELIVERED = "delivered"
    RETRIED = "retried"
    FAILED = "failed"  # gave up on the row
    REMOVED = "removed"  # the target answered 410: the subscription is deleted
    SKIPPED = "skipped"  # the outcome came too late: redelivered by staff or unsubscribed meanwhile


@dataclass
class DeliveryReport:
    delivered: int = 0
    retried: int = 0
    failed: int = 0
    removed: int = 0
    skipped: int = 0  # the outcome came too late: redelivered by staff or unsubscribed meanwhile


def webhooks_deliver_due(*, time_budget: float = 40.0, limit: int = 500) -> DeliveryReport:
    """Deliver due rows one after the other until none is due, ``limit`` were tried or
    ``time_budget`` seconds passed (under the task's soft time limit). Safe to run in any
    number of workers at once."""
    report = DeliveryReport()
    started = time.monotonic()
    for _ in range(limit):
        if time.monotonic() - started > time_budget:
            break
        claimed = _claim_next()
        if claimed is None:
            break
        delivery, attempt = claimed
        outcome = _call(delivery)
        result = _record(delivery_id=delivery.pk, attempt=attempt, outcome=outcome)
        setattr(report, result.value, getattr(report, result.value) + 1)
        WEBHOOK_DELIVERIES.labels(result).inc()
    return report


def _claim_next() -> tuple[WebhookDelivery, int] | None:
    """The oldest due row, claimed: its attempt number counted and its lease taken, committed
    before the call. SKIP LOCKED on PostgreSQL; on SQLite (no row locks) the conditional
    UPDATE decides between two workers, and the loser tries the next row."""
    while True:
        now = timezone.now()
        with transaction.atomic():
            delivery = (
                WebhookDelivery.objects.select_for_update(skip_locked=True, of=("self",))
                .select_related("event", "subscription")
                .filter(status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now)
                .order_by("next_attempt_at")
                .first()
            )
            if delivery is None:
                return None
            attempt = delivery.attempts + 1
            claimed = WebhookDelivery.objects.filter(
                pk=delivery.pk, status=WebhookDelivery.Status.PENDING, attempts=delivery.attempts
            ).update(
                attempts=attempt,
                last_attempt_at=now,
                next_attempt_at=now + timedelta(seconds=settings.WEBHOOK_LEASE_SECONDS),
            )
        if claimed:
            return delivery, attempt


def _call(delivery: WebhookDelivery) -> CallOutcome:
    """One signed POST; never raises."""
    url = delivery.subscription.target_url
    timeout = settings.WEBHOOK_TIMEOUT_SECONDS
    try:
        addresses = target_url_check(url)
    except UnsafeTarget as exc:
        return CallOutcome(None, f"not sent: {exc}")
    body = json.dumps(event_body(delivery.event), separators=(",", ":")).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        **signed_headers(
            secret=delivery.subscription.secret,
            msg_id=str(delivery.event_id),
            timestamp=int(time.time()),
            body=body,
        ),
    }
    try:
        # To the addresses just checked (not a new lookup), within the timeout in all.
        code, head = sender.post(
            url=url, addresses=addresses, body=body, headers=headers, timeout=timeout
        )
    except sender.CallTimedOut:
        return CallOutcome(None, f"no answer within {timeout:g} s")
    except sender.CallFailed as exc:
        return CallOutcome(None, str(exc))
    if 200 <= code < 300:
        return CallOutcome(code)
    text = head[:200].decode("utf-8", "replace").strip()
    if 300 <= code < 400:
        text = "redirects are not followed"
    return CallOutcome(code, f"HTTP {code}" + (f": {text}" if text else ""))


def _record(*, delivery_id: int, attempt: int, outcome: CallOutcome) -> DeliveryResult:
    """Save one attempt's outcome; returns the ``DeliveryReport`` field it counts under."""
    now = timezone.now()
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update(of=("self",))
            .select_related("subscription")
            .filter(pk=delivery_id, attempts=attempt, status=WebhookDelivery.Status.PENDING)
            .first()
        )
        if delivery is None:
            return DeliveryResult.SKIPPED  # redelivered by staff, or the subscription is gone
        subscription = delivery.subscription
        delivery.last_status_code = outcome.status_code
        delivery.last_error = outcome.error[:2000]
        if outcome.ok:
            delivery.status = WebhookDelivery.Status.DELIVERED
            delivery.delivered_at, delivery.next_attempt_at = now, None
            delivery.save()
            WebhookSubscription.objects.filter(
                pk=subscription.pk, failing_since__isnull=False
            ).update(failing_since=None)
            return DeliveryResult.DELIVERED
        if outcome.status_code == 410:
            # Zapier's convention: 410 Gone means the hook was deleted at the other end.
            subscription.delete()
            logger.info(
                "webhook subscription removed: the target answered 410",
                extra={"subscription_id": str(subscription.pk)},
            )
            return DeliveryResult.REMOVED
        return _failed(delivery, subscription, now=now)


def _failed(
    delivery: WebhookDelivery, subscription: WebhookSubscription, *, now: datetime
) -> DeliveryResult:
    subscription = WebhookSubscription.objects.select_for_update().get(pk=subscription.pk)
    if subscription.failing_since is None:
        subscription.failing_since = now
        subscription.save(update_fields=["failing_since"])
    disable_after = timedelta(days=settings.WEBHOOK_DISABLE_AFTER_DAYS)
    if subscription.disabled_at is None and now - subscription.failing_since >= disable_after:
        subscription.disabled_at = now
        subscription.disabled_reason = (
            f"No successful delivery for {settings.WEBHOOK_DISABLE_AFTER_DAYS:g} days; last "
            f"error: {delivery.last_error}"
        )[:255]
        subscription.save(update_fields=["disabled_at", "disabled_reason"])
        delivery.status, delivery.next_attempt_at = WebhookDelivery.Status.FAILED, None
        delivery.save()
        subscription.deliveries.filter(status=WebhookDelivery.Status.PENDING).update(
            status=WebhookDelivery.Status.FAILED,
            next_attempt_at=None,
            last_error="not sent: the subscription was disabled",
        )
        logger.warning(
            "webhook subscription disabled after failing for days",
            extra={"subscription_id": str(subscription.pk)},
        )
        return DeliveryResult.FAILED
    if now - delivery.created_at >= timedelta(hours=settings.WEBHOOK_RETRY_HOURS):
        delivery.status, delivery.next_attempt_at = WebhookDelivery.Status.FAILED, None
        delivery.last_error = f"gave up after {delivery.attempts} attempts: {delivery.last_error}"
        delivery.save()
        return DeliveryResult.FAILED
    delivery.next_attempt_at = now + timedelta(seconds=retry_delay(delivery.attempts))
    delivery.save()
    return DeliveryResult.RETRIED


def retry_delay(attempts: int) -> float:
    """Seconds before the next try after ``attempts`` failed ones: base x 2^(attempts-1),
    capped, times 0.5-1.0 (jitter: retries after one receiver outage spread out). With the
    defaults: 15-30 s, 30-60 s, 1-2 min, ... up to 1-2 h between tries."""
    ceiling = min(
        settings.WEBHOOK_RETRY_MAX_SECONDS,
        settings.WEBHOOK_RETRY_BASE_SECONDS * 2 ** max(attempts - 1, 0),
    )
    return ceiling * random.uniform(0.5, 1.0)  # jitter, not security
