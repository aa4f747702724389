"""The review-request object of the API contract (docs/api.md), built in one place: the
connector API's answers (create, list, detail, cancel, contact lookup) and the events' ``data``
(docs/events.md) all use it."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Protocol

from accounts.models import Location
from core.times import human_utc, iso_utc

from .models import Contact, ReviewRequest


class NamedLocation(Protocol):
    """A location as the API names it (``Location``, or the cached ``LocationPolicy``)."""

    @property
    def id(self) -> uuid.UUID: ...

    @property
    def name(self) -> str: ...


def review_request_object(
    request: ReviewRequest,
    *,
    contact: Contact | None = None,
    message: str | None = None,
    default_location: Location | None = None,
    location: NamedLocation | None = None,
) -> dict[str, Any]:
    """The review-request fields the API contract names, and nothing else. ``contact``: the
    request's contact when the caller holds it; ``message``: what was just done (a create's
    answer), else where the request stands (``review_request_summary``);
    ``default_location``: the account's default location when the caller holds it (a request
    with no location is at it; read otherwise); ``location``: where the request is, when the
    caller knows it already (e.g. from the account's cached policy)."""
    contact = contact or request.contact
    if location is None:
        location = review_request_location(request, default_location=default_location)
    if message is None:
        message = review_request_summary(review_request=request, contact=contact)
    return {
        "id": str(request.id),
        "contact_id": str(contact.id),
        "contact_name": contact.full_name,
        "contact_email": contact.email or None,
        "contact_phone": contact.phone or None,
        "scheduled_for": iso_utc(request.scheduled_for),
        "status": str(request.status),
        "message": message,
        "location_id": str(location.id) if location is not None else None,
        "location_name": location.name if location is not None else None,
    }


def review_request_location(
    request: ReviewRequest, *, default_location: Location | None = None
) -> Location | None:
    """Where ``request`` is: its location, or the account's default one when it has none
    (``None`` only in an account with no location at all)."""
    if request.location_id is not None:
        return request.location
    if default_location is not None and default_location.account_id == request.owner_id:
        return default_location
    return account_default_location(request.owner_id)


def account_default_location(owner_id: Any) -> Location | None:
    """The account's default location (its first), or ``None`` while it has none."""
    return Location.objects.filter(account_id=owner_id).order_by("position", "created_at").first()


def review_request_summary(*, review_request: ReviewRequest, contact: Contact | None = None) -> str:
    """Where a request stands, in plain words: the ``message`` of a request read back."""
    request = review_request
    name = (contact or request.contact).display_name
    status = request.Status
    if request.status == status.SCHEDULED:
        return f"Review request for {name} scheduled for {_utc(request.scheduled_for)}."
    if request.status == status.SENDING:
        return f"The review request for {name} is being sent."
    if request.status in (status.SENT, status.DELIVERED):
        verb = "delivered to" if request.status == status.DELIVERED else "sent to"
        return (
            f"Review request {verb} {name} (first message sent {_utc(request.sent_at)}); "
            "follow-ups stop as soon as they click or opt out."
        )
    why = request.get_ended_reason_display()
    detail = request.ended_detail.rstrip(".")
    if detail:
        why = f"{why} ({detail})" if why else detail
    return (
        f"Review request for {name} ended {_utc(request.ended_at)}: "
        f"{request.get_status_display().lower()}." + (f" {why}." if why else "")
    )


def _utc(moment: datetime | None) -> str:
    return human_utc(moment) if moment else "at an unknown time"
