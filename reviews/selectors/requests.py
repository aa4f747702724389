"""Reads of contacts and requests: the search rule shared by the portal and the admin, the lookups
the services need, and one request's timeline."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from accounts.access import Access, location_q, locations_q
from accounts.models import User
from accounts.services import location_rows
from contact_input.normalize import email_search_text, normalize_email, normalize_phone

from ..models import (
    Click,
    Contact,
    Feedback,
    LocationPolicy,
    Message,
    OptOutEvent,
    ReviewRequest,
)

# Digits typed as a phone number ("(415) 555-2671", "+44 20 7946 0958"): matched against the
# stored E.164 number. Fewer digits than this are searched as text only.
MIN_PHONE_DIGITS = 4
_PHONE_LIKE = re.compile(r"^[\d\s()+.\-]+$")


def phone_search_digits(search: str) -> str:
    """The digits to look for in E.164 numbers when ``search`` is written like a phone number;
    "" otherwise. A national trunk prefix ("020 7946 0958") or an international one ("00 44")
    is dropped: stored numbers start with the country code. Used by the portal's and the
    admin's searches."""
    digits = re.sub(r"\D", "", search)
    if not _PHONE_LIKE.match(search) or len(digits) < MIN_PHONE_DIGITS:
        return ""
    return digits.lstrip("0")


SEARCH_MAX_LENGTH = 100
SEARCH_MAX_WORDS = 10
# Regions whose national numbers the admin reads (it serves every business): none, so a number
# typed without its +country code is searched by its digits.
_NO_REGION = "ZZ"


def contact_search(*, search: str, region: str = "", prefix: str = "") -> Q:
    """What a person typed in a search box, as a condition on contacts (``prefix`` reaches them
    from another model: ``"contact__"``). One rule for the portal and the admin, each served by
    an index:

    * a whole e-mail address: equal to the normalised key (``Alice@Example.com`` finds
      ``alice@example.com``);
    * a whole phone number, read with ``region`` (the business's ``default_region``; national
      numbers need one): equal to the E.164 number;
    * digits written like a phone number: contained in the stored number ("555 0103");
    * anything else: every word in a name, the company or the e-mail.

    On PostgreSQL the "contains" conditions are served by the contact's trigram index (migration
    0006), the equalities by btree keys (the owner's unique ones, or the address's own for a
    search across businesses: migration 0011); SQLite scans.
    """
    search = search.strip()[:SEARCH_MAX_LENGTH]
    if not search:
        return Q()
    if "@" in search:
        try:
            _, key = normalize_email(search)
        except ValidationError:
            key = ""
        if key:
            return Q(**{f"{prefix}email_normalized": key})
    digits = phone_search_digits(search)
    if digits:
        try:
            return Q(**{f"{prefix}phone": normalize_phone(search, region or _NO_REGION)})
        except ValidationError:
            pass
        # "(415) 555" is part of one phone number, not two words (an e-mail may hold digits too).
        return Q(**{f"{prefix}phone__contains": digits}) | Q(
            **{f"{prefix}email_normalized__contains": email_search_text(search)}
        )
    condition = Q()
    for word in search.split()[:SEARCH_MAX_WORDS]:
        condition &= (
            Q(**{f"{prefix}first_name__icontains": word})
            | Q(**{f"{prefix}last_name__icontains": word})
            | Q(**{f"{prefix}company_name__icontains": word})
            | Q(**{f"{prefix}email_normalized__contains": email_search_text(word)})
        )
    return condition


def review_request_blocking(
    *, contact: Contact, now: datetime, cooldown: timedelta, location: LocationPolicy | None = None
) -> ReviewRequest | None:
    """The request that stops a new one for ``contact`` at ``location`` (``None``: at any): its
    active one, else the latest that reached them and ended less than ``cooldown`` ago. ``None``
    when a new one may be created."""
    candidates = _at(ReviewRequest.objects.filter(contact=contact), location).filter(
        Q(status__in=ReviewRequest.ACTIVE_STATUSES)
        | Q(sent_at__isnull=False, ended_at__gt=now - cooldown)
    )
    found = list(candidates.order_by("-created_at")[:5])
    for request in found:
        if request.is_active:
            return request
    return next((r for r in found if r.blocks_new_request(now=now, cooldown=cooldown)), None)


def review_request_latest(
    *, contact: Contact, location: LocationPolicy | None = None
) -> ReviewRequest | None:
    """The contact's latest request at ``location`` (``None``: at any)."""
    requests = _at(ReviewRequest.objects.filter(contact=contact), location)
    return requests.order_by("-created_at").first()


def _at(requests: QuerySet[ReviewRequest], location: LocationPolicy | None):
    """``requests`` at ``location`` (a request with no location is the default's)."""
    return requests if location is None else requests.filter(location.rows_q())


def review_requests_visible(*, access: Access) -> QuerySet[ReviewRequest]:
    """The requests ``access`` reaches: the account's, at its locations."""
    return ReviewRequest.objects.filter(owner=access.owner).filter(location_q(access))


def contacts_visible(*, access: Access) -> QuerySet[Contact]:
    """The contacts ``access`` reaches: every contact of the account for its owner; for a
    member, those with a request at one of their locations (a contact belongs to the whole
    account, and is seen where it was asked for a review)."""
    contacts = Contact.objects.filter(owner=access.owner)
    if access.location_ids is None:
        return contacts
    requests = ReviewRequest.objects.filter(
        location_q(access), owner=access.owner, contact=OuterRef("pk")
    )
    return contacts.filter(Exists(requests))


def review_requests_held_back_at(requests: QuerySet[ReviewRequest], *, at: Q) -> QuerySet:
    """The active requests among ``requests`` whose contact already has an active request at
    the location whose rows ``at`` selects (``locations_q``): the ones a move there must leave
    in place, since a contact has one active request per location (a partial unique
    constraint). An ended request never is: it may join any number of others."""
    active_there = ReviewRequest.objects.filter(
        at, contact=OuterRef("contact"), status__in=ReviewRequest.ACTIVE_STATUSES
    )
    return requests.filter(status__in=ReviewRequest.ACTIVE_STATUSES).filter(Exists(active_there))


@dataclass(frozen=True)
class RequestsMove:
    """What moving a location's requests to another location does (``moved``) or would do:
    how many requests go, and how many stay (``left``: active, and their contact already has
    an active request at the target, ``review_requests_held_back_at``)."""

    moved: int
    left: int


@dataclass(frozen=True)
class MoveEnds:
    """The two locations of a move of requests, each with the condition on the rows at it."""

    source_id: uuid.UUID
    source_rows: Q
    target_id: uuid.UUID
    target_rows: Q
    default_id: uuid.UUID


def requests_move_ends(
    *, owner: User, from_location_id: uuid.UUID, to_location_id: uuid.UUID
) -> MoveEnds:
    """The locations a move of requests goes from and to: two of the account's, not the same
    (``ValidationError``); ``Location.DoesNotExist`` for a location that is not the
    account's."""
    default_id, _ = location_rows(account=owner, location_id=None)
    source_id, source_rows = location_rows(account=owner, location_id=from_location_id)
    target_id, target_rows = location_rows(account=owner, location_id=to_location_id)
    if source_id == target_id:
        raise ValidationError("Choose another location to move the requests to.")
    return MoveEnds(source_id, source_rows, target_id, target_rows, default_id)


def location_requests_move_preview(
    *, owner: User, from_location_id: uuid.UUID, to_location_id: uuid.UUID
) -> RequestsMove:
    """What ``reviews.services.location_requests_move`` would do now (the staff's confirmation
    page): two counts over the source location's requests. Refuses what the move refuses
    (``requests_move_ends``)."""
    ends = requests_move_ends(
        owner=owner, from_location_id=from_location_id, to_location_id=to_location_id
    )
    requests = ReviewRequest.objects.filter(ends.source_rows, owner=owner)
    left = review_requests_held_back_at(requests, at=ends.target_rows).count()
    return RequestsMove(moved=requests.count() - left, left=left)


def review_requests_of(
    *,
    access: Access,
    status: str = "",
    changed_since: datetime | None = None,
    location_id: uuid.UUID | None = None,
) -> QuerySet[ReviewRequest]:
    """The requests ``access`` reaches, newest first (``created_at``, then ``id``: a total
    order, for keyset pagination), with their contacts; optionally one ``status``, only those
    changed (``updated_at``) at or after ``changed_since``, only those at ``location_id`` (one
    ``access`` reaches: the caller checks it; a request with no location is the default's)."""
    requests = review_requests_visible(access=access).select_related("contact", "location")
    if status:
        requests = requests.filter(status=status)
    if changed_since is not None:
        requests = requests.filter(updated_at__gte=changed_since)
    if location_id is not None:
        requests = requests.filter(
            locations_q(
                [location_id], default_location_id=access.default_location_id, field="location"
            )
        )
    return requests.order_by("-created_at", "-id")


def contacts_find(
    *,
    access: Access,
    email_key: str = "",
    phone: str = "",
    location_id: uuid.UUID | None = None,
) -> list[Contact]:
    """The contacts ``access`` reaches (``contacts_visible``) with this normalised e-mail
    (``normalize_email``'s key) or this E.164 phone: at most one each (the dedup keys are
    unique per account), the e-mail's first; with ``location_id``, only a contact with a
    request at that location."""
    match = Q()
    if email_key:
        match |= Q(email_normalized=email_key)
    if phone:
        match |= Q(phone=phone)
    if not match:
        return []
    contacts = contacts_visible(access=access).filter(match)
    if location_id is not None:
        at = ReviewRequest.objects.filter(
            locations_q(
                [location_id], default_location_id=access.default_location_id, field="location"
            ),
            owner=access.owner,
            contact=OuterRef("pk"),
        )
        contacts = contacts.filter(Exists(at))
    found = list(contacts)
    return sorted(found, key=lambda contact: contact.email_normalized != email_key)


def review_request_latest_visible(
    *, access: Access, contact: Contact, location_id: uuid.UUID | None = None
) -> ReviewRequest | None:
    """The contact's latest request among those ``access`` reaches (at ``location_id`` only,
    when given)."""
    requests = (
        review_requests_visible(access=access).filter(contact=contact).select_related("location")
    )
    if location_id is not None:
        requests = requests.filter(
            locations_q(
                [location_id], default_location_id=access.default_location_id, field="location"
            )
        )
    return requests.order_by("-created_at").first()


# --- One request's timeline (owner portal and staff admin) ---------------------------------------


@dataclass(frozen=True)
class TimelineEvent:
    at: datetime
    kind: str  # a CSS hook: added, sent, delivered, failed, clicked, feedback, opt-out, ended...
    title: str
    detail: str = ""


_MESSAGE_EVENTS = (
    ("sent_at", "sent", "sent"),
    ("delivered_at", "delivered", "delivered"),
    ("unknown_at", "unknown", "outcome unknown: we are checking with the provider"),
    ("failed_at", "failed", "failed"),
    ("cancelled_at", "cancelled", "cancelled before it was sent"),
)


_EFFECT_ORDER = {"added": 0, "cancelled": 3, "ended": 4}


def _message_name(message: Message) -> str:
    which = "First message" if message.step == 0 else f"Follow-up {message.step}"
    return f"{which} ({message.get_channel_display()})"


def review_request_timeline(*, review_request: ReviewRequest) -> list[TimelineEvent]:
    """What happened to one request, oldest first: created, each message's sends, deliveries,
    failures and cancellations, clicks on review sites (and fetches by link scanners, which
    did not count), private feedback, opt-outs of the contact, and the end."""
    request = review_request
    events = [
        TimelineEvent(
            request.created_at,
            "added",
            "Review request created",
            f"First message planned for {_local(request.scheduled_for)}",
        )
    ]
    for message in request.messages.order_by("step"):
        if message.waiting_for_review_site:
            events.append(
                TimelineEvent(
                    message.updated_at,
                    "waiting",
                    f"{_message_name(message)} waiting for a review site",
                    message.last_error,
                )
            )
        for stamp, kind, verb in _MESSAGE_EVENTS:
            at = getattr(message, stamp)
            if at is None:
                continue
            detail = ""
            if kind == "sent" and message.to_address:
                detail = f"To {message.to_address}"
            elif kind == "failed":
                detail = " ".join(
                    part for part in (message.last_error_code, message.last_error[:300]) if part
                )
            events.append(TimelineEvent(at, kind, f"{_message_name(message)} {verb}", detail))
    for click in Click.objects.filter(review_request=request).select_related("site"):
        where = click.site.label if click.site else click.url
        if click.counted:
            events.append(TimelineEvent(click.created_at, "clicked", f"Clicked through to {where}"))
        else:
            events.append(
                TimelineEvent(
                    click.created_at,
                    "ignored",
                    f"Link to {where} fetched by a machine (not counted)",
                    click.ignored_reason.replace("_", " "),
                )
            )
    for note in Feedback.objects.filter(review_request=request):
        events.append(TimelineEvent(note.created_at, "feedback", "Private feedback", note.text))
    opt_outs = OptOutEvent.objects.filter(
        owner_id=request.owner_id, contact_id=request.contact_id, created_at__gte=request.created_at
    )
    for event in opt_outs:
        verb = "Opted out of" if event.action == OptOutEvent.Action.OPT_OUT else "Opted back in to"
        events.append(
            TimelineEvent(
                event.created_at,
                "opt-out" if event.action == OptOutEvent.Action.OPT_OUT else "opt-in",
                f"{verb} {event.get_channel_display()}",
                event.get_source_display(),
            )
        )
    if request.ended_at is not None:
        events.append(
            TimelineEvent(
                request.ended_at,
                "ended",
                f"Request ended: {request.get_status_display().lower()}",
                _ending(request),
            )
        )
    # Events of one instant: the cause (a click, an opt-out) before its effects (the follow-ups
    # it cancelled, the end of the request).
    return sorted(events, key=lambda event: (event.at, _EFFECT_ORDER.get(event.kind, 1)))


def _ending(request: ReviewRequest) -> str:
    """Why a request ended, in one sentence: its reason, and the detail unless the detail
    already says it ("The contact opted out" + "The contact opted out of every channel...")."""
    reason, detail = request.get_ended_reason_display(), request.ended_detail
    if not detail or detail.lower().startswith(reason.lower()):
        return detail or reason
    return f"{reason}. {detail}" if reason else detail


def _local(moment: datetime) -> str:
    """As the portal's templates write times, in the current (the owner's) time zone."""
    local = timezone.localtime(moment)
    return f"{local.day} {local:%b %Y, %H:%M}"
