"""What contacts do on the review page: follow a review-site link, leave private feedback."""

from __future__ import annotations

import hashlib
import hmac
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.core.mail import EmailMessage
from django.db import transaction
from django.db.models import Max
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from events.models import EventType

from ..click_filter import IgnoredReason, ignored_reason
from ..models import BusinessSettings, Click, Feedback, Message, ReviewRequest, ReviewSite
from .events import (
    feedback_received_record,
    review_request_click_record,
    review_request_event_record,
)

logger = logging.getLogger(__name__)

FEEDBACK_PER_REQUEST = 5  # at most this many private notes per request, ever
FEEDBACK_PER_IP_PER_HOUR = 10
FEEDBACK_NOTIFY_TASK = "reviews.tasks.feedback_notify_owner_task"


def ip_hash(ip: str) -> str:
    """A keyed hash of an IP address: enough to spot repeats, useless to identify anyone."""
    if not ip:
        return ""
    return hmac.new(settings.SECRET_KEY.encode(), ip.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class ClickOutcome:
    url: str
    counted: bool
    ignored_reason: IgnoredReason | Literal[""]  # "" when counted


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


def _count_click(request: ReviewRequest, *, click: Click, at: datetime) -> None:
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
        if settings.FEEDBACK_NOTIFY_OWNER:
            transaction.on_commit(lambda: _queue_notification(feedback.pk))
    return feedback


def _queue_notification(feedback_id: int) -> None:
    """After commit: the owner's e-mail as a task. The feedback is stored either way; a broker
    that refuses the task costs the e-mail only (the portal's Feedback page lists it)."""
    try:
        current_app.send_task(FEEDBACK_NOTIFY_TASK, args=[feedback_id])
    except Exception:
        logger.warning("feedback e-mail task not published", exc_info=True)


def feedback_notify_owner(*, feedback_id: int) -> bool:
    """E-mail the owner one private feedback (its text, the contact's name, a link to the
    request in the portal) through Django's mail path (``EMAIL_BACKEND``). At most once: the
    row is claimed (``notified_at``) before sending, so a task run twice sends one e-mail;
    a send that raises releases the claim and re-raises, for the task's retry. Nothing is
    sent when the business turned the e-mails off (``BusinessSettings.notify_feedback``, read
    when the task runs). Returns whether this call sent it."""
    feedback = (
        Feedback.objects.select_related("review_request__contact", "review_request__owner")
        .filter(pk=feedback_id, notified_at=None)
        .first()
    )
    if feedback is None:
        return False
    request = feedback.review_request
    owner = request.owner
    if not BusinessSettings.for_owner(owner).notify_feedback:
        return False
    if not Feedback.objects.filter(pk=feedback_id, notified_at=None).update(
        notified_at=timezone.now()
    ):
        return False  # another run claimed it meanwhile
    context = {
        "owner": owner,
        "contact_name": request.contact.display_name,
        "text": feedback.text,
        "request_url": settings.SITE_URL + reverse("portal:request", args=[request.pk]),
        "feedback_url": settings.SITE_URL + reverse("portal:feedback"),
    }
    message = EmailMessage(
        subject=f"Private feedback from {request.contact.display_name}",
        body=render_to_string("reviews/feedback_notice_email.txt", context),
        to=[owner.email],
    )
    try:
        message.send()
    except Exception:
        Feedback.objects.filter(pk=feedback_id).update(notified_at=None)
        raise
    return True


def _under_rate(key: str, limit: int) -> bool:
    """A fixed hourly window in the cache; fails open when the cache is down."""
    try:
        cache.add(key, 0, timeout=int(timedelta(hours=1).total_seconds()))
        return cache.incr(key) <= limit
    except Exception:
        logger.warning("cache unavailable for the feedback rate limit", exc_info=True)
        return True
