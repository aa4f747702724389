"""Adding a contact: the start of every review request, from the API, the CSV import and the
back office alike."""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import User
from contact_input.normalize import ContactInput
from core.times import human_utc

from .. import db, selectors
from ..models import (
    BusinessSettings,
    Channel,
    Contact,
    Message,
    PlannedStep,
    ReviewRequest,
    ReviewSite,
    SendTime,
    UnknownLocation,
    messages_for,
)
from .dispatch import dispatcher_kick


class ContactAddOutcome(enum.StrEnum):
    SCHEDULED = "scheduled"  # a new review request was created
    ALREADY_ACTIVE = "already_active"  # the contact's active request was returned
    COOLDOWN = "cooldown"  # a recent request that reached them was returned
    OPTED_OUT = "opted_out"  # opted out of every channel we have an address for


@dataclass(frozen=True)
class ContactAddResult:
    review_request: ReviewRequest
    contact: Contact
    outcome: ContactAddOutcome
    created: bool  # whether ``review_request`` is new (the API answers 201, else 200)
    contact_created: bool
    message: str  # plain words: what was scheduled, or why nothing new was


def contact_add(
    *,
    owner: User,
    data: ContactInput,
    source: str = Contact.Source.API,
    policy: BusinessSettings | None = None,
    location_id: uuid.UUID | None = None,
) -> ContactAddResult:
    """Add or update a contact and give them at most one scheduled review request at a
    location of the business (``location_id``; ``None``: its default location).

    The one entry point for the API, the CSV import and everything else that adds a contact.
    ``data`` is the input as ``contact_input.normalize.clean_contact_input`` parsed it, with the
    owner's default region: callers parse first (a bad field is its ``ValidationError``, naming
    each field), so input is parsed once and in one way. ``ValidationError`` here too when the
    merged metadata would grow past its limit; nothing is written then.

    In one transaction, with no network I/O: find the contact by e-mail or phone (the e-mail
    match wins when they point at two contacts), update it with the non-empty values
    (metadata merged) or create it, then return the contact's active request, or the latest
    one that reached them within the cooldown, or create a request with all its message rows
    (step 0 pending at ``scheduled_for``, follow-ups planned).

    Contacts are one per account, whatever the location; requests are per location: the
    blocking request is the contact's at this location (one with no location is the default
    location's), so the same person added at another location gets that location's own request
    (each listing is its own review). A new request records its location (none only for an
    account made by hand without one), and is planned by the location's policy
    (``BusinessSettings.at``: its sending window, time zone and review sites).
    ``ValidationError`` on ``location_id`` for a location of another account.

    Concurrency: the transaction first serialises adds of one person
    (``db.contact_add_lock``),
    so concurrent adds run one after the other and the later ones find the contact and its
    request; the matched rows are also locked (``SELECT ... FOR UPDATE``) against other writers
    such as opt-outs. The per-owner unique constraints on e-mail and phone and the
    one-active-request constraint are the backstop: if one still fires (a writer that bypassed
    the lock), the whole transaction runs once more and finds the winner's rows. Inside a
    caller's transaction (the API's ``Idempotency-Key``) it runs in a savepoint, so that retry
    works there too.

    ``policy``: the owner's ``BusinessSettings`` when the caller already holds them (the CSV
    import reads them once per batch instead of once per row); the location is resolved from
    it, cached with it, so the location costs no query.
    """
    if policy is None:
        policy = BusinessSettings.for_owner(owner)
    try:
        policy = policy.at(location_id)
    except UnknownLocation:
        raise ValidationError({"location_id": "No such location in this account."}) from None
    try:
        return _contact_add_once(owner=owner, clean=data, policy=policy, source=source)
    except IntegrityError:
        # The other transaction has committed by the time our insert failed: a second run
        # sees its contact and request, and deduplicates onto them.
        return _contact_add_once(owner=owner, clean=data, policy=policy, source=source)


def _contact_add_once(
    *, owner: User, clean: ContactInput, policy: BusinessSettings, source: str
) -> ContactAddResult:
    """One run of ``contact_add``, in one transaction."""
    now = timezone.now().replace(microsecond=0)
    with transaction.atomic():
        db.contact_add_lock(owner=owner, email_normalized=clean.email_normalized, phone=clean.phone)
        matches = db.contacts_matching(
            owner=owner, email_normalized=clean.email_normalized, phone=clean.phone
        )
        return _decide(
            owner=owner, clean=clean, policy=policy, source=source, matches=matches, now=now
        )


def _decide(
    *,
    owner: User,
    clean: ContactInput,
    policy: BusinessSettings,
    source: str,
    matches: list[Contact],
    now: datetime,
) -> ContactAddResult:
    """The rest of ``contact_add``'s transaction, once the matching contacts are locked."""
    by_email = next(
        (c for c in matches if clean.email_normalized == c.email_normalized != ""), None
    )
    by_phone = next((c for c in matches if clean.phone == c.phone != ""), None)
    notes: list[str] = []
    contact = by_email or by_phone
    contact_created = contact is None
    if contact is None:
        # Inserted with its request below (or saved alone if it gets none).
        contact = Contact(owner=owner, source=source)
        contact.apply_input(clean)
    else:
        take_phone = by_phone is None or by_phone.pk == contact.pk
        matched_by = "e-mail" if contact is by_email else "phone number"
        changed = contact.apply_input(clean, take_phone=take_phone)
        if changed:
            contact.save(update_fields=changed)
        notes.append(
            f"Matched the existing contact by {matched_by}"
            + ("; details updated." if changed else "; nothing to update.")
        )
        if by_phone is not None and not take_phone:
            notes.append(
                f"The phone number {clean.phone} belongs to another contact "
                f"({by_phone.display_name}), so it was not added to this one."
            )

    if not contact_created:
        blocking = selectors.review_request_blocking(
            contact=contact, now=now, cooldown=policy.cooldown, location=policy.location
        )
        if blocking is not None:
            return _existing(contact, blocking, policy, notes)

    steps = policy.plan_steps(contact)
    if not steps:
        if contact_created:
            contact.save()
        return _opted_out(owner, policy, contact, contact_created, now, notes)

    delay = clean.delay_hours if clean.delay_hours is not None else policy.default_delay_hours
    send = policy.send_time(
        channel=steps[0].channel, requested=now + timedelta(hours=delay), phone=contact.phone
    )
    review_request = ReviewRequest(
        owner=owner, contact=contact, location_id=policy.location_id, scheduled_for=send.at
    )
    hold = Message.hold_reason(has_review_site=_has_review_site(owner, policy))
    messages = messages_for(review_request, steps, due_at=send.at, hold_reason=hold)
    db.review_request_insert(
        contact=contact if contact_created else None,
        request=review_request,
        messages=messages,
    )
    if send.at <= now and not hold:
        # Latency only: a worker dispatches right after commit instead of at the next
        # beat sweep, which stays the safety net if this kick is lost.
        transaction.on_commit(dispatcher_kick)
    return ContactAddResult(
        review_request=review_request,
        contact=contact,
        outcome=ContactAddOutcome.SCHEDULED,
        created=True,
        contact_created=contact_created,
        message=_scheduled_message(contact, steps, send, [hold, *notes] if hold else notes),
    )


def _has_review_site(owner: User, policy: BusinessSettings) -> bool:
    """Whether the request's location lists a review site, for a new request. The cached
    answer is trusted when it is yes (the send checks again); a no is confirmed under the lock
    that ``review_site_add`` takes, so a request held now is seen by the release of a site
    added meanwhile."""
    if policy.has_review_site:
        return True
    BusinessSettings.lock_for(owner)
    return ReviewSite.listed_at(owner.pk, policy.location)


def _existing(
    contact: Contact, request: ReviewRequest, policy: BusinessSettings, notes: list[str]
) -> ContactAddResult:
    name = contact.display_name
    if request.status == ReviewRequest.Status.SCHEDULED:
        text = (
            f"{name} already has a review request scheduled for "
            f"{_when(request.scheduled_for)}; no new request created."
        )
        if hold := Message.hold_reason(has_review_site=policy.has_review_site):
            text = f"{text} {hold}"
        outcome = ContactAddOutcome.ALREADY_ACTIVE
    elif request.is_active:
        text = (
            f"{name} already has a review request in progress (first message sent "
            f"{_when(request.sent_at or request.scheduled_for)}); no new request created."
        )
        outcome = ContactAddOutcome.ALREADY_ACTIVE
    else:
        until = request.cooldown_ends_at(policy.cooldown)
        text = (
            f"{name} was sent a review request on {_day(request.sent_at)} (now "
            f"{request.get_status_display().lower()}); no new request until {_day(until)} "
            f"({policy.cooldown_days}-day cooldown)."
        )
        outcome = ContactAddOutcome.COOLDOWN
    return ContactAddResult(
        review_request=request,
        contact=contact,
        outcome=outcome,
        created=False,
        contact_created=False,
        message=" ".join([text, *notes]),
    )


def _opted_out(
    owner: User,
    policy: BusinessSettings,
    contact: Contact,
    contact_created: bool,
    now: datetime,
    notes: list[str],
) -> ContactAddResult:
    """Every channel we have an address for is opted out: nothing will ever be sent.

    The contact's latest request at the location is returned if there is one; otherwise a
    request is recorded as ``opted_out`` straight away, so the caller gets an id and staff see
    the attempt.
    """
    channels = " and ".join(
        str(c.label) for c in (Channel.SMS, Channel.EMAIL) if contact.address_for(c)
    )
    text = f"{contact.display_name} has opted out of {channels}; no review request will be sent."
    latest = (
        None
        if contact_created
        else selectors.review_request_latest(contact=contact, location=policy.location)
    )
    created = latest is None
    if latest is None:
        latest = ReviewRequest.objects.create(
            owner=owner,
            contact=contact,
            location_id=policy.location_id,
            scheduled_for=now,
            status=ReviewRequest.Status.OPTED_OUT,
            opted_out_at=now,
            ended_at=now,
            ended_reason=ReviewRequest.EndedReason.OPTED_OUT,
            ended_detail=f"Opted out of {channels} before the request was created.",
        )
    return ContactAddResult(
        review_request=latest,
        contact=contact,
        outcome=ContactAddOutcome.OPTED_OUT,
        created=created,
        contact_created=contact_created,
        message=" ".join([text, *notes]),
    )


def _scheduled_message(
    contact: Contact, steps: list[PlannedStep], send: SendTime, notes: list[str]
) -> str:
    first = steps[0]
    parts = [
        f"Review request scheduled for {contact.display_name} by "
        f"{Channel(first.channel).label} at {_when(send.at)}."
    ]
    if send.shifted and send.window is not None:
        parts.append(
            f"Moved from {_when(send.requested)}: {send.hours_text(Channel(first.channel).label)}"
        )
    follow_ups = steps[1:]
    if follow_ups:
        channels = sorted({Channel(s.channel).label for s in follow_ups})
        count = len(follow_ups)
        parts.append(
            f"Then up to {count} follow-up{'s' if count != 1 else ''} by "
            f"{' and '.join(channels)}, stopped as soon as they click or opt out."
        )
    for channel in (Channel.SMS, Channel.EMAIL):
        if contact.address_for(channel) and contact.opted_out_of(channel):
            parts.append(f"No {Channel(channel).label}: the contact opted out of it.")
    return " ".join(parts + notes)


def _when(moment: datetime | None) -> str:
    return human_utc(moment) if moment else "an unknown time"


def _day(moment: datetime | None) -> str:
    return f"{moment.astimezone(UTC):%Y-%m-%d}" if moment else "an unknown date"
