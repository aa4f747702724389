"""Opt-outs and opt-ins: honoured at once, recorded for the audit, never undone by accident.

An opt-out sets the contact's per-channel opt-out (the first one counts), writes an
``OptOutEvent`` (kept ``OPT_OUT_AUDIT_RETENTION_DAYS``), cancels every unsent message on that
channel in the contact's active requests and ends a request that has no channel left
(``opted_out``). A message already claimed by a send task is checked again right before the
provider call, so it is not sent either.

Scope: e-mail unsubscribes and complaints apply to the business's contact with that address
(one per business: e-mail is a dedup key). An SMS reply applies to every contact with that
phone number: all businesses send from the one Twilio number or Messaging Service of this
service, so a STOP revokes consent for that sender (and Twilio itself blocks further texts
from it to that number).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from ..models import Channel, Contact, OptOutEvent, ReviewRequest
from ..sms_keywords import Intent, classify
from .events import contact_opted_out_record
from .lifecycle import review_request_advance

logger = logging.getLogger(__name__)


def contacts_opt_out(
    *,
    contacts: Iterable[Contact],
    channel: str,
    source: str,
    raw_text: str = "",
    external_id: str = "",
    at: datetime | None = None,
) -> int:
    """Opt ``contacts`` out of ``channel``. Returns how many were newly opted out.

    Idempotent: an event with an ``external_id`` already recorded changes nothing.
    """
    at = at or timezone.now()
    newly = 0
    with transaction.atomic():
        locked = (
            Contact.objects.select_for_update()
            .filter(pk__in=[c.pk for c in contacts])
            .order_by("pk")
        )
        for contact in locked:
            if not _audit(
                contact, channel, OptOutEvent.Action.OPT_OUT, source, raw_text, external_id
            ):
                continue  # a replay of an event already applied
            changed = contact.opt_out(channel, source=source, at=at)
            if changed:
                contact.save(update_fields=changed)
                newly += 1
            _stop_requests(contact, at=at)
            if changed:  # reported with the requests it stopped
                contact_opted_out_record(contact=contact, channel=channel, source=source, at=at)
    if newly:
        logger.info(
            "contacts opted out", extra={"channel": channel, "source": source, "count": newly}
        )
    return newly


def _stop_requests(contact: Contact, *, at: datetime) -> None:
    for request in ReviewRequest.objects.select_for_update().filter(
        contact=contact, status__in=ReviewRequest.ACTIVE_STATUSES
    ):
        if not contact.reachable_channels():
            request.save(
                update_fields=request.transition(
                    ReviewRequest.Status.OPTED_OUT,
                    at=at,
                    reason=ReviewRequest.EndedReason.OPTED_OUT,
                    detail="The contact opted out of every channel we can reach them on.",
                )
            )
            request.cancel_open_messages(at=at)
        else:
            # Cancels the unsent messages on the channel they left, plans or ends the rest.
            review_request_advance(request=request, cause=ReviewRequest.Status.OPTED_OUT, at=at)


def contacts_opt_in(
    *,
    contacts: Iterable[Contact],
    channel: str,
    source: str,
    raw_text: str = "",
    external_id: str = "",
) -> int:
    """Opt ``contacts`` back in to ``channel``. Requests that ended stay ended."""
    count = 0
    with transaction.atomic():
        for contact in (
            Contact.objects.select_for_update()
            .filter(pk__in=[c.pk for c in contacts])
            .order_by("pk")
        ):
            if not contact.opted_out_of(channel):
                continue
            if not _audit(
                contact, channel, OptOutEvent.Action.OPT_IN, source, raw_text, external_id
            ):
                continue
            contact.save(update_fields=contact.opt_in(channel))
            count += 1
    return count


def _audit(
    contact: Contact, channel: str, action: str, source: str, raw_text: str, external_id: str
) -> bool:
    """Record the event; False when this external event was already recorded (a replay)."""
    try:
        with transaction.atomic():
            OptOutEvent.objects.create(
                owner_id=contact.owner_id,
                contact=contact,
                channel=channel,
                action=action,
                source=source,
                address=contact.address_for(channel),
                raw_text=raw_text[:1600],
                external_id=external_id[:255],
            )
    except IntegrityError:
        return False
    return True


def sms_reply_record(*, from_number: str, body: str, message_sid: str = "") -> Intent:
    """An inbound SMS (Twilio webhook): opt out, opt back in, or nothing, across every contact
    with that number. Returns what the text asked for (the webhook answers accordingly)."""
    intent = classify(body)
    if intent not in (Intent.OPT_OUT, Intent.OPT_IN) or not from_number:
        return intent
    contacts = list(Contact.objects.filter(phone=from_number))
    if intent == Intent.OPT_OUT:
        contacts_opt_out(
            contacts=contacts,
            channel=Channel.SMS,
            source=Contact.OptOutSource.SMS_REPLY,
            raw_text=body,
            external_id=message_sid,
        )
    else:
        # START undoes only an opt-out made by text; one recorded by staff, the business or
        # a carrier report stays.
        by_text = Contact.OptOutSource.SMS_REPLY
        contacts_opt_in(
            contacts=[c for c in contacts if c.sms_opt_out_source == by_text],
            channel=Channel.SMS,
            source=Contact.OptOutSource.SMS_REPLY,
            raw_text=body,
            external_id=message_sid,
        )
    return intent


def contact_email_unsubscribe(
    *,
    token: str,
    source: str = Contact.OptOutSource.EMAIL_UNSUBSCRIBE,
    raw_text: str = "",
    external_id: str = "",
) -> Contact | None:
    """The unsubscribe link or one-click header of a request's e-mails. ``None`` for an
    unknown token; idempotent."""
    request = ReviewRequest.objects.select_related("contact").filter(token=token).first()
    if request is None:
        return None
    contacts_opt_out(
        contacts=[request.contact],
        channel=Channel.EMAIL,
        source=source,
        raw_text=raw_text,
        external_id=external_id,
    )
    return request.contact


def opt_out_events_purge(*, now: datetime | None = None) -> int:
    """Delete audit rows older than ``OPT_OUT_AUDIT_RETENTION_DAYS`` (daily, from beat)."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=settings.OPT_OUT_AUDIT_RETENTION_DAYS)
    deleted, _ = OptOutEvent.objects.filter(created_at__lt=cutoff).delete()
    return deleted
