"""Celery tasks of the reviews app: three-line adapters over ``reviews.services``.

No task here is ever scheduled for later through the broker (no ``eta``/``countdown``): due
work lives in ``Message.due_at`` and beat's dispatcher finds it.
"""

from __future__ import annotations

from celery import shared_task

from . import services


@shared_task(name="reviews.tasks.dispatch_due_messages", acks_late=True)
def dispatch_due_messages() -> None:
    """Beat, every DISPATCH_INTERVAL_SECONDS, and the on-commit kick. Idempotent."""
    services.messages_dispatch_due()


@shared_task(name="reviews.tasks.send_messages_task", acks_late=True, reject_on_worker_lost=True)
def send_messages_task(message_ids: list[str]) -> None:
    """Thin adapter; the rules live in services.messages_send (idempotent per row).

    The dispatcher's send task: a few due rows, sent one after the other (Celery's per-task
    cost is paid once for them). ``acks_late`` + ``reject_on_worker_lost``: a task whose
    worker dies is delivered again. The second run finds the rows the first one claimed no
    longer ``queued`` and skips them, so a redelivery never sends twice and cannot loop; a row
    claimed but not recorded is recovered by its lease.

    Then it kicks the dispatcher (at most one kick per second gets through): while rows are
    due, the queue is topped up as fast as workers empty it instead of once per beat interval.
    """
    services.messages_send(message_ids=message_ids)
    services.dispatcher_kick()


@shared_task(name="reviews.tasks.send_message_task", acks_late=True, reject_on_worker_lost=True)
def send_message_task(message_id: str) -> None:
    """One row: what versions before ``send_messages_task`` published, kept so that a deploy
    still runs such tasks found in the broker. Same guarantees."""
    services.message_send(message_id=message_id)
    services.dispatcher_kick()


@shared_task(name="reviews.tasks.reconcile_unknown_messages", acks_late=True)
def reconcile_unknown_messages() -> None:
    """Beat: ask providers about messages whose outcome is unknown. Never resends."""
    services.messages_reconcile_unknown()


@shared_task(name="reviews.tasks.purge_opt_out_events", acks_late=True)
def purge_opt_out_events() -> None:
    """Beat, daily: delete opt-out audit rows past their retention."""
    services.opt_out_events_purge()


@shared_task(
    name="reviews.tasks.feedback_notify_owner_task",
    acks_late=True,
    autoretry_for=(Exception,),
    retry_backoff=30,
    retry_backoff_max=300,  # the broker is never a calendar: minutes at most
    max_retries=4,
)
def feedback_notify_owner_task(feedback_id: int) -> None:
    """Queued when feedback is stored (after commit). At most one e-mail per feedback."""
    services.feedback_notify_owner(feedback_id=feedback_id)
