"""What the reviews app reports to webhooks (``events``): one function per kind of event,
called inside the transaction of the change, after it was made on the (locked) rows.

``data`` is the contract's review-request object (``reviews.representations``) plus
``channel`` (the channel of the latest message sent; ``null`` before any) and the details of
the event (click, feedback, opt-out). docs/events.md is the catalogue.
"""

from __future__ import annotations

from collections.abc import Container
from datetime import datetime
from typing import Any

from core.times import iso_utc
from events.models import EventType
from events.services import event_record

from ..models import Click, Contact, Feedback, Message, ReviewRequest
from ..representations import review_request_object
from ..selectors import review_request_latest

# A request ending in one of these statuses is reported (opted_out: ``contact.opted_out``).
ENDING_EVENTS: dict[str, EventType] = {
    ReviewRequest.Status.COMPLETED: EventType.REVIEW_REQUEST_COMPLETED,
    ReviewRequest.Status.FAILED: EventType.REVIEW_REQUEST_FAILED,
    ReviewRequest.Status.CANCELLED: EventType.REVIEW_REQUEST_CANCELLED,
}


def review_request_event_record(
    *,
    request: ReviewRequest,
    type: str,
    at: datetime,
    subscribed: Container[str] | None = None,
    **details: Any,
) -> None:
    """Report ``type`` about ``request`` (its state as changed in memory, saved or not yet).

    ``subscribed``: the owner's subscribed event types when the caller read them already
    (``events.services.event_types_subscribed``, once per send batch); a type not in it is
    not recorded, without asking the database again."""
    if subscribed is not None and type not in subscribed:
        return

    def data() -> dict[str, Any]:
        return {**_request_data(request), **details}

    event_record(
        owner_id=request.owner_id,
        type=type,
        data=data,
        occurred_at=at,
        location_id=request.location_id,
    )


def review_request_ending_record(
    *, request: ReviewRequest, at: datetime, subscribed: Container[str] | None = None
) -> None:
    """Report the ending ``request`` just reached, if it is one that is reported
    (``subscribed``: as for ``review_request_event_record``)."""
    type = ENDING_EVENTS.get(request.status)
    if type is None:
        return
    details = {"reason": request.ended_detail} if type != EventType.REVIEW_REQUEST_COMPLETED else {}
    review_request_event_record(request=request, type=type, at=at, subscribed=subscribed, **details)


def review_request_click_record(*, request: ReviewRequest, click: Click, at: datetime) -> None:
    # Reported as the click is recorded, so its site is still there (only a later delete of
    # the site empties ``Click.site``).
    assert click.site is not None, "a click is recorded with its site"
    review_request_event_record(
        request=request,
        type=EventType.REVIEW_REQUEST_CLICKED,
        at=at,
        click={
            "site": click.site.label if click.site else None,  # a site deleted since: null
            "url": click.url,
            "clicked_at": iso_utc(at),
        },
    )


def feedback_received_record(*, request: ReviewRequest, feedback: Feedback) -> None:
    review_request_event_record(
        request=request,
        type=EventType.FEEDBACK_RECEIVED,
        at=feedback.created_at,
        feedback={
            "id": str(feedback.pk),
            "text": feedback.text,
            "created_at": iso_utc(feedback.created_at),
        },
    )


def contact_opted_out_record(*, contact: Contact, channel: str, source: str, at: datetime) -> None:
    """Report an opt-out; ``data`` is the contact's latest request (the fields of the contact
    alone, request fields ``null``, when they have none) with the channel left and how."""

    found: list[ReviewRequest | None] = []

    def latest_request() -> ReviewRequest | None:
        if not found:
            found.append(review_request_latest(contact=contact))
        return found[0]

    def data() -> dict[str, Any]:
        latest = latest_request()
        base = (
            review_request_object(latest, contact=contact)
            if latest is not None
            else {
                "id": None,
                "contact_id": str(contact.id),
                "contact_name": contact.full_name,
                "contact_email": contact.email or None,
                "contact_phone": contact.phone or None,
                "scheduled_for": None,
                "status": None,
                "message": "",
                "location_id": None,
                "location_name": None,
            }
        )
        return {**base, "channel": channel, "how": source}

    # At the location of the contact's latest request (the default one when they have none).
    event_record(
        owner_id=contact.owner_id,
        type=EventType.CONTACT_OPTED_OUT,
        data=data,
        occurred_at=at,
        location_id=lambda: getattr(latest_request(), "location_id", None),
    )


def _request_data(request: ReviewRequest) -> dict[str, Any]:
    latest = (
        Message.objects.filter(review_request=request, sent_at__isnull=False)
        .order_by("-step")
        .values_list("channel", flat=True)
        .first()
    )
    return {**review_request_object(request), "channel": latest}
