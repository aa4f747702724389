"""Realistic data for the owner portal's tests and screenshots.

Requests are created by the real ``contact_add`` and then moved along their lifecycle with the
models' own ``transition()`` (what the delivery engine does), so every row is one the service
could have produced: message rows per step, a timestamp per status, the ending recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import Location, User
from accounts.services import member_add
from reviews.models import Click, Feedback, Message, OptOutEvent, ReviewRequest, ReviewSite
from reviews.services import contact_add
from tests.factories import UserFactory
from tests.support.contacts import contact_input


def add_request(
    owner, *, created_at: datetime | None = None, location=None, **contact
) -> ReviewRequest:
    """A new review request through ``contact_add`` (the owner's policy plans the steps), at
    ``location`` (``None``: the default one). ``created_at`` backdates it (the funnel counts
    requests by when they were added)."""
    result = contact_add(
        owner=owner,
        data=contact_input(owner, contact),
        location_id=location.pk if location is not None else None,
    )
    request = result.review_request
    if created_at is not None:
        ReviewRequest.objects.filter(pk=request.pk).update(
            created_at=created_at, scheduled_for=created_at
        )
        Message.objects.filter(review_request=request, step=0).update(due_at=created_at)
        request.refresh_from_db()
    return request


def _move(row, to: str, at: datetime, **fields) -> None:
    changed = row.transition(to, at=at, **fields)
    row.save(update_fields=changed)


def send_first(request: ReviewRequest, *, at: datetime, delivered: bool = False) -> Message:
    """The first message goes out (and is delivered): the request is ``sent``/``delivered``."""
    message = request.messages.get(step=0)
    for status in (Message.Status.QUEUED, Message.Status.SENDING):
        _move(message, status, at)
    message.to_address = request.contact.address_for(message.channel)
    message.provider = "outbox"
    message.provider_message_id = f"outbox:{message.pk}"
    message.save(update_fields=["to_address", "provider", "provider_message_id"])
    _move(message, Message.Status.SENT, at)
    _move(request, ReviewRequest.Status.SENDING, at)
    _move(request, ReviewRequest.Status.SENT, at)
    if delivered:
        later = at + timedelta(seconds=4)
        _move(message, Message.Status.DELIVERED, later)
        _move(request, ReviewRequest.Status.DELIVERED, later)
    return message


def _end(request: ReviewRequest, to: str, at: datetime, reason: str, detail: str = "") -> None:
    _move(request, to, at, reason=reason, detail=detail)
    request.cancel_open_messages(at=at)


def click(request: ReviewRequest, *, at: datetime, site: ReviewSite | None = None) -> None:
    """A person clicks through to a review site: the request ends ``clicked``."""
    site = site or ReviewSite.objects.filter(owner=request.owner).order_by("position").first()
    made = Click.objects.create(
        review_request=request,
        site=site,
        url=site.url if site else "https://g.page/r/example/review",
        method="GET",
        user_agent="Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X)",
        counted=True,
    )
    Click.objects.filter(pk=made.pk).update(created_at=at)
    _end(request, ReviewRequest.Status.CLICKED, at, ReviewRequest.EndedReason.CLICKED)


def fail(request: ReviewRequest, *, at: datetime, code: str, error: str) -> None:
    """The provider refuses the first message for good: message and request ``failed``."""
    message = request.messages.get(step=0)
    for status in (Message.Status.QUEUED, Message.Status.SENDING):
        _move(message, status, at)
    message.last_error_code, message.last_error = code, error
    message.to_address = request.contact.address_for(message.channel)
    message.save(update_fields=["last_error_code", "last_error", "to_address"])
    _move(message, Message.Status.FAILED, at)
    _move(request, ReviewRequest.Status.SENDING, at)
    _end(request, ReviewRequest.Status.FAILED, at, ReviewRequest.EndedReason.DELIVERY_FAILED, error)


def opt_out(request: ReviewRequest, *, at: datetime, channel: str = "sms") -> None:
    """The contact replies STOP: audit row, contact opted out, request ``opted_out``."""
    contact = request.contact
    contact.save(update_fields=contact.opt_out(channel, source="sms_reply", at=at))
    event = OptOutEvent.objects.create(
        owner=request.owner,
        contact=contact,
        channel=channel,
        action=OptOutEvent.Action.OPT_OUT,
        source="sms_reply",
        address=contact.address_for(channel),
        raw_text="STOP",
    )
    OptOutEvent.objects.filter(pk=event.pk).update(created_at=at)
    _end(request, ReviewRequest.Status.OPTED_OUT, at, ReviewRequest.EndedReason.OPTED_OUT)


def leave_feedback(request: ReviewRequest, *, at: datetime, text: str) -> None:
    note = Feedback.objects.create(review_request=request, text=text)
    Feedback.objects.filter(pk=note.pk).update(created_at=at)


PEOPLE = [
    ("Maria", "Garcia", "maria.garcia@example.com", "+14155550101"),
    ("James", "Wilson", "j.wilson@example.net", ""),
    ("Aiko", "Tanaka", "", "+14155550103"),
    ("Olivia", "Brown", "olivia.b@example.org", "+14155550104"),
    ("Noah", "Martin", "noah.martin@example.com", ""),
    ("Fatima", "Khan", "", "+14155550106"),
    ("Lucas", "Dubois", "lucas@dubois.example", "+14155550107"),
    ("Emma", "Johnson", "emma.johnson@example.com", ""),
    ("Chen", "Wei", "", "+14155550109"),
    ("Sofia", "Rossi", "sofia.rossi@example.it", "+14155550110"),
]


def seed_business(
    owner, *, now: datetime | None = None, locations: Sequence[Location] = ()
) -> list[ReviewRequest]:
    """A small plumbing business two weeks into using the service: review sites, and ten
    requests in every state (scheduled, sent, delivered, clicked, failed, opted out), taking
    turns at ``locations`` (none: the default location)."""
    now = now or timezone.now()
    for position, (url, label) in enumerate(
        [
            ("https://g.page/r/acme-plumbing/review", "Google"),
            ("https://www.facebook.com/acmeplumbing/reviews", "Facebook"),
        ]
    ):
        ReviewSite.objects.get_or_create(
            owner=owner, url=url, defaults={"label": label, "position": position}
        )
    made = []
    for index, (first, last, email, phone) in enumerate(PEOPLE):
        made.append(
            add_request(
                owner,
                created_at=now - timedelta(days=13 - index, hours=index % 5),
                location=locations[index % len(locations)] if locations else None,
                first_name=first,
                last_name=last,
                email=email,
                mobile_phone_number=phone,
            )
        )
    garcia, wilson, tanaka, brown, martin, khan, dubois, johnson, chen, _rossi = made
    day = timedelta(days=1)
    for request in (garcia, wilson, tanaka, brown, martin, dubois, johnson, chen):
        send_first(request, at=request.created_at + timedelta(minutes=1), delivered=True)
    click(garcia, at=garcia.created_at + timedelta(hours=3))
    leave_feedback(
        garcia,
        at=garcia.created_at + timedelta(hours=3, minutes=5),
        text="Fast, tidy, and fixed the leak first time. Thank you!",
    )
    click(brown, at=brown.created_at + 2 * day)
    click(dubois, at=dubois.created_at + timedelta(hours=5))
    click(martin, at=martin.created_at + day)
    opt_out(tanaka, at=tanaka.created_at + timedelta(hours=1))
    fail(khan, at=khan.created_at + timedelta(minutes=1), code="21614", error="Not a mobile number")
    # chen and johnson: sent, follow-ups pending; rossi: scheduled (just added).
    for request in made:
        request.refresh_from_db()
    return made


def seeded_owner() -> User:
    """Acme Plumbing, an owner in Los Angeles, with ``seed_business``'s data (the browser
    tests and screenshots of the portal)."""
    owner = _acme_plumbing()
    seed_business(owner)
    return owner


def _acme_plumbing() -> User:
    return UserFactory.create(
        email="owner@acme-plumbing.example",
        business_name="Acme Plumbing",
        time_zone="America/Los_Angeles",
    )


def seeded_owner_with_locations() -> User:
    """``seeded_owner``'s business with three locations (its first, the default, renamed
    Downtown; Uptown and Airport, each with its own Google site), its requests taking turns at
    them."""
    owner = _acme_plumbing()
    downtown = Location.objects.get(account=owner, position=0)
    downtown.name = "Downtown"
    downtown.save(update_fields=["name"])
    others = []
    for position, name in enumerate(["Uptown", "Airport"], start=1):
        location = Location.objects.create(
            account=owner, name=name, time_zone=owner.time_zone, position=position
        )
        ReviewSite.objects.create(
            owner=owner,
            location=location,
            url=f"https://g.page/r/acme-plumbing-{name.lower()}/review",
            label="Google",
        )
        others.append(location)
    seed_business(owner, locations=[downtown, *others])
    return owner


# --- Members --------------------------------------------------------------------------------------

MEMBER_PASSWORD = "a long member passphrase 42"


def member_client(owner, *, role: str, locations, email: str) -> Client:
    """A client logged in as a new member of ``owner``'s account (``client.user``)."""
    member = member_add(
        account=owner,
        email=email,
        password=MEMBER_PASSWORD,
        role=role,
        location_ids=[location.pk for location in locations],
    )
    client = Client()
    client.force_login(member)
    client.user = member  # type: ignore[attr-defined]
    return client


def query_count(client: Client, path: str) -> int:
    """The queries of a page once its caches are warm (it is fetched twice)."""
    assert client.get(path).status_code == 200
    with CaptureQueriesContext(connection) as queries:
        assert client.get(path).status_code == 200
    return len(queries)
