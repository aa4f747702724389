"""Actions staff (and later the business) take on requests and messages."""

from __future__ import annotations

import logging

from django.db import IntegrityError, transaction
from django.utils import timezone

from contact_input.normalize import is_uuid
from core.times import human_utc

from ..models import BusinessSettings, Channel, Message, ReviewRequest
from .dispatch import dispatcher_kick
from .events import review_request_ending_record
from .lifecycle import review_request_lock, review_request_lock_by_message

logger = logging.getLogger(__name__)


class ResendRefused(Exception):
    """A resend that would break a rule; the message says which."""


def message_resend(*, message_id: str, force: bool = False) -> Message:
    """Send a ``failed`` or ``unknown`` message again, through the normal path: the row goes
    back to ``pending`` (due now), the dispatcher claims it and a send task claims it again.

    An ``unknown`` SMS may already be on the person's phone: it is resent only with
    ``force``. A failed request is reopened (``sent`` if something reached the contact, else
    ``scheduled``); follow-ups cancelled when it failed stay cancelled. Raises
    ``ResendRefused`` when the row or its request cannot be resent.
    """
    if not is_uuid(message_id):
        raise ResendRefused(f"No message {message_id}.")
    now = timezone.now()
    with transaction.atomic():
        request = review_request_lock_by_message(message_id=message_id, load=True)
        message = Message.objects.select_for_update(of=("self",)).filter(pk=message_id).first()
        if request is None or message is None:
            raise ResendRefused(f"No message {message_id}.")
        if message.status not in (Message.Status.FAILED, Message.Status.UNKNOWN):
            raise ResendRefused(
                f"Only failed or unknown messages are resent; this one is {message.status}."
            )
        unknown_sms = message.status == Message.Status.UNKNOWN and message.channel == Channel.SMS
        if unknown_sms and not force:
            raise ResendRefused(
                "The outcome of this SMS is unknown: it may already have been delivered. Run "
                "reconcile_unknown first, or pass --force to send it again anyway."
            )
        contact = request.contact
        if not contact.can_receive(message.channel):
            raise ResendRefused(
                f"The contact cannot receive {message.get_channel_display()} (no address or "
                "opted out)."
            )
        if request.status == ReviewRequest.Status.FAILED:
            try:
                with transaction.atomic():
                    request.save(update_fields=request.reopen())
            except IntegrityError:
                raise ResendRefused(
                    "The contact has another active review request; this one stays failed."
                ) from None
        elif not request.is_active:
            raise ResendRefused(
                f"The review request has ended ({request.status}); it is not resent."
            )
        if message.step == 0 and request.status == ReviewRequest.Status.SENDING:
            request.save(update_fields=request.transition(ReviewRequest.Status.SCHEDULED, at=now))
        message.due_at = now
        message.attempts = 0
        message.last_error = f"resent by staff (was {message.status}: {message.last_error})"[:2000]
        message.last_error_code = ""
        message.provider_message_id = ""
        message.save(
            update_fields=[
                *message.transition(Message.Status.PENDING, at=now),
                "due_at",
                "attempts",
                "last_error",
                "last_error_code",
                "provider_message_id",
            ]
        )
        transaction.on_commit(dispatcher_kick)
    logger.warning("message resent by staff", extra={"message_id": str(message.pk)})
    return message


class CancelRefused(Exception):
    """A cancel of a request that has already ended; the message says how and when."""


def review_request_cancel(
    *, review_request: ReviewRequest, detail: str = "", refuse_ended: bool = False
) -> ReviewRequest:
    """Stop a request now (staff or the business): unsent messages are cancelled in one UPDATE.
    A message already with the provider cannot be called back. Idempotent for ended requests,
    unless ``refuse_ended``: then an ended request (read under the lock) raises
    ``CancelRefused`` saying why, as the API's cancel answers it."""
    now = timezone.now()
    with transaction.atomic():
        request = ReviewRequest.objects.select_for_update().get(pk=review_request.pk)
        if request.is_active:
            request.save(
                update_fields=request.transition(
                    ReviewRequest.Status.CANCELLED,
                    at=now,
                    reason=ReviewRequest.EndedReason.CANCELLED,
                    detail=detail,
                )
            )
            request.cancel_open_messages(at=now)
            review_request_ending_record(request=request, at=now)
        elif refuse_ended:
            # An ended request has its end time (constraint reviews_request_ended_has_ended_at).
            assert request.ended_at is not None
            raise CancelRefused(
                f"This review request already ended ({request.get_status_display().lower()}"
                f" on {human_utc(request.ended_at)}): "
                f"{request.get_ended_reason_display() or 'nothing is left to send'}. "
                "Nothing was changed."
            )
    return request


class SendNowRefused(Exception):
    """ "Send now" would break a rule (opted out, quiet hours, nothing to send); says which."""


def review_request_send_now(*, review_request: ReviewRequest) -> Message:
    """Make the request's next pending message due now and kick the dispatcher (staff).

    The message then goes through the normal path: the dispatcher claims it, a send task
    claims it again and re-checks opt-outs as it does, just before the provider call. Refused
    (``SendNowRefused``) when the request has ended, when no message is waiting (a follow-up
    is only ``planned`` until the previous one was sent; one already queued or sending is on
    its way), when the contact cannot receive the channel (no address, opted out), and during
    the business's quiet hours for that channel in the recipient's time zone: "send now"
    never overrides them, the refusal says when the window opens. A transient-failure retry
    keeps its attempt count. Returns the message.
    """
    now = timezone.now()
    with transaction.atomic():
        request = review_request_lock(request_id=review_request.pk)
        if not request.is_active:
            raise SendNowRefused(f"The review request has ended ({request.status}).")
        message = (
            request.messages.select_for_update()
            .filter(status=Message.Status.PENDING)
            .order_by("step")
            .first()
        )
        if message is None:
            if request.messages.filter(
                status=Message.Status.PLANNED, last_error_code=Message.WAITING_FOR_REVIEW_SITE
            ).exists():
                raise SendNowRefused(Message.WAITING_FOR_REVIEW_SITE_TEXT)
            in_flight = request.messages.filter(
                status__in=(Message.Status.QUEUED, Message.Status.SENDING)
            ).exists()
            raise SendNowRefused(
                "A message of this request is already on its way."
                if in_flight
                else "No message is waiting to be sent (the next follow-up is planned only "
                "once the previous message was sent)."
            )
        contact = request.contact
        channel_name = message.get_channel_display()
        if not contact.address_for(message.channel):
            raise SendNowRefused(f"The contact has no {channel_name} address.")
        if contact.opted_out_of(message.channel):
            raise SendNowRefused(f"The contact opted out of {channel_name}.")
        policy = BusinessSettings.for_owner(request.owner).at(request.location_id)
        allowed = policy.send_time(channel=message.channel, requested=now, phone=contact.phone)
        if allowed.at > now:
            raise SendNowRefused(
                f"Quiet hours: {allowed.hours_text(channel_name)} The earliest allowed time "
                f"is {human_utc(allowed.at)}."
            )
        if message.due_at is None or message.due_at > now:
            message.due_at = now
            message.save(update_fields=["due_at", "updated_at"])
        if message.step == 0 and request.scheduled_for > now:
            request.scheduled_for = now
            request.save(update_fields=["scheduled_for", "updated_at"])
        transaction.on_commit(dispatcher_kick)
    logger.info("message made due now by staff", extra={"message_id": str(message.pk)})
    return message
