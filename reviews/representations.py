"""The review-request object of the API contract (docs/api.md), built in one place: the
connector API's responses and the events' ``data`` (docs/events.md) both use it."""

from __future__ import annotations

from typing import Any

from core.times import iso_utc

from .models import Contact, ReviewRequest

# The ``message`` of a request read back (an API answer to a create has its own).
STATUS_MESSAGES = {
    ReviewRequest.Status.SCHEDULED: "The review request is scheduled.",
    ReviewRequest.Status.SENDING: "The review request is being sent.",
    ReviewRequest.Status.SENT: "The review request was sent.",
    ReviewRequest.Status.DELIVERED: "The review request was delivered.",
    ReviewRequest.Status.CLICKED: "The contact clicked a review link.",
    ReviewRequest.Status.COMPLETED: "Every message of the review request was sent.",
    ReviewRequest.Status.FAILED: "The review request could not be delivered.",
    ReviewRequest.Status.CANCELLED: "The review request was cancelled.",
    ReviewRequest.Status.OPTED_OUT: "The contact opted out; nothing more will be sent.",
}


def review_request_object(
    request: ReviewRequest, *, contact: Contact | None = None, message: str | None = None
) -> dict[str, Any]:
    """The review-request fields the API contract names, and nothing else. ``contact``: the
    request's contact when the caller holds it; ``message``: the default says the status."""
    contact = contact or request.contact
    return {
        "id": str(request.id),
        "contact_id": str(contact.id),
        "contact_name": contact.full_name,
        "contact_email": contact.email or None,
        "contact_phone": contact.phone or None,
        "scheduled_for": iso_utc(request.scheduled_for),
        "status": str(request.status),
        "message": STATUS_MESSAGES.get(request.status, "") if message is None else message,
    }
