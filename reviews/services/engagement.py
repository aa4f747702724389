"""What contacts do on the review page: follow a review-site link, leave private feedback."""

from __future__ import annotations

import hashlib
import hmac
import logging
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from events.models import EventType

from ..click_filter import ignored_reason
from ..models import Click, Feedback, Message, ReviewRequest, ReviewSite
from .events import (
    feedback_received_record,
    review_request_click_record,
    review_request_event_record,
)

logger = logging.getLogger(__name__)

FEEDBACK_PER_REQUEST = 5  # at most this many private notes per request, ever
FEEDBACK_PER_IP_PER_HOUR = 10


def ip_hash(ip: str) -> str:
    """A keyed hash of an IP address: enough to spot repeats, useless to identify anyone."""
    if not ip:
        return ""
    return hmac.new(settings.SECRET_KEY.encode(), ip.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class ClickOutcome:
    url: str
    counted: bool
    ignored_reason: str


def click_record(
    *, review_request: ReviewRequest, site: ReviewSite, method: str, user_agent: str, ip: str
) -> ClickOutcome:
    """Record a fetch of ``site``'s link from the request's page; a human click ends the request
    as ``clicked`` and cancels its unsent follow-ups in one UPDATE. Returns where to redirect.

    Every fetch is recorded; bots, scanners, HEAD requests and fetches within a second of the
    message going out are recorded with the reason and change nothing else.
    """
    now = timezone.now()
    with transaction.atomic():
        request = ReviewRequest.objects.select_for_update().get(pk=review_request.pk)
        last_out = Message.objects.filter(review_request=request).aggregate(
            sent=Max("sent_at"), delivered=Max("delivered_at"), sending=Max("sending_at")
        )
        moments = [m for m in last_out.values() if m is not None]
        since = (now - max(moments)).total_seconds() if moments else None
        reason = ignored_reason(method=method, user_agent=user_agent, seconds_since_send=since)
        click = Click.objects.create(
            review_request=request,
            site=site,
            url=site.url,
            method=method.upper()[:8],
            user_agent=user_agent[:500],
            ip_hash=ip_hash(ip),
            counted=not reason,
            ignored_reason=reason,
        )
        if not reason:
            _count_click(request, click=click, at=now)
    return ClickOutcome(url=site.url, counted=not reason, ignored_reason=reason)


def _count_click(request: ReviewRequest, *, click: Click, at) -> None:
    if request.status == ReviewRequest.Status.SENDING:
        # The first message's outcome is still unknown to us, but a person holding its link
        # proves it arrived: the request was sent (when the send was attempted), then clicked.
        first = request.messages.filter(step=0).first()
        request.save(update_fields=request.transition(ReviewRequest.Status.SENT, at=at))
        if first is not None and first.sending_at:
            request.sent_at = first.sending_at
            request.save(update_fields=["sent_at"])
        review_request_event_record(request=request, type=EventType.REVIEW_REQUEST_SENT, at=at)
    if request.status in ReviewRequest.sources(ReviewRequest.Status.CLICKED):
        request.save(
            update_fields=request.transition(
                ReviewRequest.Status.CLICKED, at=at, reason=ReviewRequest.EndedReason.CLICKED
            )
        )
        request.cancel_open_messages(at=at)
    elif request.clicked_at is None:
        # Ended already (the sequence finished, or an opt-out): the click is still worth
        # knowing, but the status says why the sequence stopped.
        request.clicked_at = at
        request.save(update_fields=["clicked_at", "updated_at"])
    else:
        return  # reported at the first human click only
    review_request_click_record(request=request, click=click, at=at)


def feedback_leave(*, review_request: ReviewRequest, text: str, ip: str) -> Feedback:
    """Store private feedback. Raises ``ValidationError`` for empty or oversize text and when
    the per-request or per-address limits are reached."""
    text = (text or "").strip()
    if not text:
        raise ValidationError({"text": "Write a few words first."})
    if len(text) > Feedback.MAX_LENGTH:
        raise ValidationError({"text": f"At most {Feedback.MAX_LENGTH} characters, please."})
    hashed = ip_hash(ip)
    if hashed and not _under_rate(f"reviews:feedback:{hashed}", FEEDBACK_PER_IP_PER_HOUR):
        raise ValidationError({"text": "Too many messages from here; please try again later."})
    with transaction.atomic():
        request = ReviewRequest.objects.select_for_update().get(pk=review_request.pk)
        if request.feedback.count() >= FEEDBACK_PER_REQUEST:
            raise ValidationError({"text": "Thank you, we already have your feedback."})
        feedback = Feedback.objects.create(review_request=request, text=text, ip_hash=hashed)
        feedback_received_record(request=request, feedback=feedback)
    return feedback


def _under_rate(key: str, limit: int) -> bool:
    """A fixed hourly window in the cache; fails open when the cache is down."""
    try:
        cache.add(key, 0, timeout=int(timedelta(hours=1).total_seconds()))
        return cache.incr(key) <= limit
    except Exception:
        logger.warning("cache unavailable for the feedback rate limit", exc_info=True)
        return True
