"""The dispatcher: due message rows become send tasks, each row exactly once.

Beat runs ``messages_dispatch_due`` every ``DISPATCH_INTERVAL_SECONDS`` (and ``contact_add``
kicks it on commit for a message due now). The database decides what is due; the broker only
carries short send tasks (a few rows each, ``send_batches``), never anything scheduled for later.

Exactly once, even with two beats or two dispatchers at the same moment: a batch is selected
``FOR UPDATE SKIP LOCKED`` (PostgreSQL: a second dispatcher skips the rows the first holds and
takes the next ones) and moved ``pending → queued`` by a conditional UPDATE in the same
transaction; the send tasks are published only after commit. On SQLite, ``select_for_update``
does nothing, but every transaction starts with ``BEGIN IMMEDIATE`` (settings), so dispatchers
run one after the other and the second finds the rows already queued.

Leases recover rows whose task was lost: ``queued`` longer than ``DELIVERY_QUEUED_LEASE_SECONDS``
(a flushed broker, a failed publish; nothing was sent) goes back to ``pending``; ``sending``
longer than ``DELIVERY_SENDING_LEASE_SECONDS`` (a worker killed mid-send; it may have gone out)
becomes ``unknown`` and is never sent again automatically.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial

from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from ..models import Message

logger = logging.getLogger(__name__)

KICK_CACHE_KEY = "reviews:dispatch-kick"
# The tasks this module publishes, by name: reviews/tasks.py registers them under these names
# and calls the services, so the services never import the tasks.
DISPATCH_TASK = "reviews.tasks.dispatch_due_messages"
SEND_TASK = "reviews.tasks.send_messages_task"


@dataclass
class DispatchResult:
    claimed: list[str] = field(default_factory=list)
    requeued: int = 0  # queued past the lease, back to pending
    unknown: int = 0  # sending past the lease, now unknown
    enqueue_failed: int = 0  # claimed but the broker refused the task: back to pending


def messages_dispatch_due(
    *, now: datetime | None = None, batch_size: int | None = None, limit: int | None = None
) -> DispatchResult:
    """Recover expired leases, then claim due pending rows in batches and enqueue their send
    tasks (``send_batches``) after each batch commits. Idempotent; safe to run concurrently.

    At most ``DISPATCH_MAX_QUEUED`` rows are left queued at once, so the broker holds a short
    queue and a row's queued lease measures a lost task, not a long backlog.
    """
    now = now or timezone.now()
    batch_size = batch_size or settings.DISPATCH_BATCH_SIZE
    result = DispatchResult()
    result.requeued, result.unknown = message_leases_recover(now=now)

    budget = (
        settings.DISPATCH_MAX_QUEUED - Message.objects.filter(status=Message.Status.QUEUED).count()
    )
    if limit is not None:
        budget = min(budget, limit)
    while budget > 0:
        claimed = _claim_batch(now=now, size=min(batch_size, budget), result=result)
        result.claimed += claimed
        budget -= len(claimed)
        if len(claimed) < batch_size:
            break
    if result.claimed or result.requeued or result.unknown:
        logger.info(
            "dispatched due messages",
            extra={
                "claimed": len(result.claimed),
                "requeued": result.requeued,
                "unknown": result.unknown,
            },
        )
    return result


def _claim_batch(*, now: datetime, size: int, result: DispatchResult) -> list[str]:
    with transaction.atomic():
        ids = list(
            _due(now)
            .select_for_update(skip_locked=True)
            .order_by("due_at", "pk")
            .values_list("pk", flat=True)[:size]
        )
        if not ids:
            return []
        updated = Message.objects.filter(pk__in=ids, status=Message.Status.PENDING).update(
            status=Message.Status.QUEUED, queued_at=now, updated_at=now
        )
        if updated != len(ids):
            # Not expected under the row locks; if a writer bypassed them, enqueue only what
            # this transaction moved.
            ids = list(
                Message.objects.filter(
                    pk__in=ids, status=Message.Status.QUEUED, queued_at=now
                ).values_list("pk", flat=True)
            )
        claimed = [str(pk) for pk in ids]
        transaction.on_commit(partial(_enqueue, claimed, now, result))
    return claimed


def _enqueue(message_ids: list[str], queued_at: datetime, result: DispatchResult) -> None:
    """After commit: the claimed rows as send tasks (``send_batches``). Rows whose task could
    not be published go back to pending at once (nothing was sent), instead of waiting for
    their lease."""
    batches = send_batches(message_ids)
    for index, batch in enumerate(batches):
        try:
            current_app.send_task(SEND_TASK, args=[batch])
        except Exception:
            unsent = [message_id for rest in batches[index:] for message_id in rest]
            logger.warning(
                "broker refused send tasks; messages back to pending",
                extra={"count": len(unsent)},
                exc_info=True,
            )
            result.enqueue_failed += Message.objects.filter(
                pk__in=unsent, status=Message.Status.QUEUED, queued_at=queued_at
            ).update(status=Message.Status.PENDING, updated_at=timezone.now())
            return


# A dispatch of up to this many rows goes out as one task per row, so that its sends run in
# parallel on the workers' threads; a larger one as this many tasks or more.
SEND_SPREAD = 16


def send_batches(message_ids: list[str]) -> list[list[str]]:
    """Split claimed rows (in due order) into send tasks of at most ``DELIVERY_SEND_BATCH``
    rows each, and no larger than spreading them over ``SEND_SPREAD`` tasks needs.

    A send task's own cost on the worker (receive, acknowledge, trace, the kick) is a few
    milliseconds of CPU, as much as the send; a backlog pays it once per batch. A small
    dispatch (a few rows due) still becomes one task per row: their sends are not queued
    behind each other.
    """
    size = max(1, min(settings.DELIVERY_SEND_BATCH, len(message_ids) // SEND_SPREAD))
    return [message_ids[start : start + size] for start in range(0, len(message_ids), size)]


def _due(now: datetime) -> QuerySet[Message]:
    return Message.objects.filter(status=Message.Status.PENDING, due_at__lte=now)


def _queued_expired(now: datetime) -> QuerySet[Message]:
    """Queued past the lease: no task claimed it, so nothing was sent."""
    cutoff = now - timedelta(seconds=settings.DELIVERY_QUEUED_LEASE_SECONDS)
    return Message.objects.filter(status=Message.Status.QUEUED, updated_at__lt=cutoff)


def _sending_expired(now: datetime) -> QuerySet[Message]:
    """Sending past the lease: a task claimed it and never recorded the outcome."""
    cutoff = now - timedelta(seconds=settings.DELIVERY_SENDING_LEASE_SECONDS)
    return Message.objects.filter(status=Message.Status.SENDING, updated_at__lt=cutoff)


def message_leases_recover(*, now: datetime) -> tuple[int, int]:
    """Rows left in flight by a lost task or a dead worker. Returns (requeued, unknown)."""
    # Queued: no task claimed it, so nothing was sent. Its due_at is unchanged: re-dispatched
    # in this same run. A late duplicate task finds the row claimed again and does nothing.
    requeued = _queued_expired(now).update(status=Message.Status.PENDING, updated_at=now)
    # Sending: a task claimed it and never recorded the outcome; the provider may have it.
    unknown = _sending_expired(now).update(
        status=Message.Status.UNKNOWN,
        unknown_at=now,
        updated_at=now,
        last_error=(
            f"The send did not finish within {settings.DELIVERY_SENDING_LEASE_SECONDS} s (the "
            "worker stopped or lost the database); it may have been sent. Reconciled by the "
            "provider's status callback or messages_reconcile_unknown; never resent automatically."
        ),
        last_error_code="lease_expired",
    )
    if requeued or unknown:
        logger.warning(
            "recovered messages past their lease", extra={"requeued": requeued, "unknown": unknown}
        )
    return requeued, unknown


@dataclass(frozen=True)
class DispatchPreview:
    due: list[Message]
    queued_expired: int
    sending_expired: int
    queued_now: int


def messages_dispatch_preview(*, now: datetime | None = None, limit: int = 100) -> DispatchPreview:
    """What ``messages_dispatch_due`` would do now, changing nothing (the ``dispatch_due``
    command's ``--dry-run``)."""
    now = now or timezone.now()
    due = list(_due(now).select_related("review_request__contact").order_by("due_at", "pk")[:limit])
    return DispatchPreview(
        due=due,
        queued_expired=_queued_expired(now).count(),
        sending_expired=_sending_expired(now).count(),
        queued_now=Message.objects.filter(status=Message.Status.QUEUED).count(),
    )


def dispatcher_kick() -> None:
    """Ask a worker to dispatch now (run after commit). Latency only, so it never raises:
    the beat sweep finds the row anyway. At most one kick per second gets published."""
    try:
        if not cache.add(KICK_CACHE_KEY, 1, timeout=1):
            return
    except Exception:
        logger.warning("cache unavailable for the dispatch kick", exc_info=True)
    try:
        current_app.send_task(DISPATCH_TASK, retry=False, expires=settings.DISPATCH_TASK_EXPIRES)
    except Exception:
        logger.warning("dispatch kick not published; the beat sweep will send", exc_info=True)
