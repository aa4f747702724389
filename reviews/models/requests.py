"""Review requests, their outbound message rows, and what contacts do with them (clicks and
private feedback)."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Coalesce

from accounts.models import Location

from .business import PlannedStep
from .contacts import Channel, Contact
from .locations import location_key
from .sites import ReviewSite

# --- Review requests ------------------------------------------------------------------------------


# Statuses in which a request may still send something (ReviewRequest.ACTIVE_STATUSES).
_ACTIVE_REQUEST_STATUSES = ["scheduled", "sending", "sent", "delivered"]


def new_public_token() -> str:
    """An unguessable token for the public review page ``/r/<token>/`` (128 bits)."""
    return secrets.token_urlsafe(16)


class InvalidTransition(Exception):
    """A status change the lifecycle does not allow (e.g. anything out of ``cancelled``)."""


def _sources(transitions: dict[str, frozenset[str]], to: str) -> frozenset[str]:
    return frozenset(src for src, targets in transitions.items() if to in targets)


class ReviewRequest(models.Model):
    """One request for a review sent to one contact at one location of the business: the first
    message and its follow-ups.

    At most one *active* request per contact and location, enforced by a partial unique
    constraint, so even a race cannot schedule two. A request without a location (created
    before locations, or by a release without them) is at the account's default location.
    Every status has a timestamp recording when it was first reached;
    ``ended_at``/``ended_reason`` say when and why the sequence stopped.
    """

    class Status(models.TextChoices):
        SCHEDULED = "scheduled", "Scheduled"
        SENDING = "sending", "Sending"
        SENT = "sent", "Sent"
        DELIVERED = "delivered", "Delivered"
        CLICKED = "clicked", "Clicked"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"
        OPTED_OUT = "opted_out", "Opted out"

    class EndedReason(models.TextChoices):
        CLICKED = "clicked", "The contact clicked through to a review site"
        SEQUENCE_FINISHED = "sequence_finished", "Every message of the sequence was sent"
        OPTED_OUT = "opted_out", "The contact opted out"
        UNREACHABLE = "unreachable", "No channel left (address missing or opted out)"
        DELIVERY_FAILED = "delivery_failed", "Delivery failed permanently"
        CANCELLED = "cancelled", "Cancelled by staff or the business"

    # Requests that may still send something; at most one per contact.
    ACTIVE_STATUSES = frozenset({Status.SCHEDULED, Status.SENDING, Status.SENT, Status.DELIVERED})
    ENDED_STATUSES = frozenset(
        {Status.CLICKED, Status.COMPLETED, Status.FAILED, Status.CANCELLED, Status.OPTED_OUT}
    )
    TRANSITIONS: dict[str, frozenset[str]] = {
        Status.SCHEDULED: frozenset(
            {Status.SENDING, Status.SENT, Status.FAILED, Status.CANCELLED, Status.OPTED_OUT}
        ),
        # back to scheduled: the first message is retried later (transient failure)
        Status.SENDING: frozenset(
            {Status.SCHEDULED, Status.SENT, Status.FAILED, Status.CANCELLED, Status.OPTED_OUT}
        ),
        Status.SENT: frozenset(
            {
                Status.DELIVERED,
                Status.CLICKED,
                Status.COMPLETED,
                Status.FAILED,
                Status.CANCELLED,
                Status.OPTED_OUT,
            }
        ),
        Status.DELIVERED: frozenset(
            {Status.CLICKED, Status.COMPLETED, Status.FAILED, Status.CANCELLED, Status.OPTED_OUT}
        ),
        Status.CLICKED: frozenset({Status.COMPLETED}),
        Status.COMPLETED: frozenset(),
        # reopened by a staff resend of its failed message (``reopen``)
        Status.FAILED: frozenset({Status.SCHEDULED, Status.SENT}),
        Status.CANCELLED: frozenset(),
        Status.OPTED_OUT: frozenset(),
    }
    STATUS_TIMESTAMPS: dict[str, str] = {
        Status.SENDING: "sending_at",
        Status.SENT: "sent_at",
        Status.DELIVERED: "delivered_at",
        Status.CLICKED: "clicked_at",
        Status.COMPLETED: "completed_at",
        Status.FAILED: "failed_at",
        Status.CANCELLED: "cancelled_at",
        Status.OPTED_OUT: "opted_out_at",
    }

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(  # indexed by reviews_request_owner_keyset (owner, -created_at, -id)
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="review_requests",
        db_index=False,
    )
    contact = models.ForeignKey(  # indexed by reviews_request_contact_recent (contact, ...)
        Contact, on_delete=models.CASCADE, related_name="review_requests", db_index=False
    )
    # NULL: the account's default location. RESTRICT: a location with requests is not deleted
    # (its account's deletion takes both). Indexed by reviews_request_location_list and
    # reviews_request_loc_contacts.
    location = models.ForeignKey(
        Location,
        on_delete=models.RESTRICT,
        null=True,
        blank=True,
        related_name="review_requests",
        db_index=False,
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.SCHEDULED)
    scheduled_for = models.DateTimeField(help_text="When the first message is due (UTC).")
    # Unique by reviews_request_token_unique (a constraint, not unique=True: that would also
    # build a LIKE index on PostgreSQL that no query uses and every insert maintains).
    token = models.CharField(max_length=32, default=new_public_token, editable=False)
    ended_reason = models.CharField(max_length=30, choices=EndedReason.choices, blank=True)
    ended_detail = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    sending_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True, help_text="First message sent.")
    delivered_at = models.DateTimeField(null=True, blank=True)
    clicked_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    opted_out_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["token"], name="reviews_request_token_unique"),
            models.UniqueConstraint(
                "contact",
                location_key(),
                condition=Q(status__in=_ACTIVE_REQUEST_STATUSES),
                name="reviews_request_one_active_per_contact_location",
            ),
            models.CheckConstraint(
                condition=Q(status__in=_ACTIVE_REQUEST_STATUSES) | Q(ended_at__isnull=False),
                name="reviews_request_ended_has_ended_at",
            ),
        ]
        indexes = [
            # The portal's list, newest first, one keyset page at a time (and its status filter).
            models.Index(
                fields=["owner", "-created_at", "-id"], name="reviews_request_owner_keyset"
            ),
            models.Index(
                fields=["owner", "status", "-created_at", "-id"],
                name="reviews_request_owner_status",
            ),
            # A location's list, newest first (the NULL location: the default's).
            models.Index(
                fields=["location", "owner", "-created_at", "-id"],
                name="reviews_request_location_list",
            ),
            # A location's contacts, counted (the admin's contact list filtered by location):
            # the distinct contacts read in order from the index, stopping at the count's cap.
            models.Index(
                fields=["location", "owner", "contact"], name="reviews_request_loc_contacts"
            ),
            models.Index(fields=["contact", "-created_at"], name="reviews_request_contact_recent"),
            # The admin's list, newest first across every owner.
            models.Index(fields=["-created_at", "-id"], name="reviews_request_recent"),
            # The dashboards' series (activity.selectors.review_request_daily_counts): a range
            # of one timestamp, read from the index alone for one owner or all. Partial: a
            # request enters each index only when it reaches that status (never on insert).
            *(
                models.Index(
                    fields=[stamp, "owner", *extra],
                    condition=Q(**{f"{stamp}__isnull": False}),
                    name=f"reviews_request_{name}_day",
                )
                for name, stamp, extra in (
                    ("sent", "sent_at", ["clicked_at"]),  # ... and the click-through of those
                    ("delivered", "delivered_at", []),
                    ("clicked", "clicked_at", []),
                    ("failed", "failed_at", []),
                    ("opted_out", "opted_out_at", []),
                )
            ),
        ]

    def __str__(self) -> str:
        return f"Review request {self.id} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE_STATUSES

    # "Delivered", the one definition the portal and the admin count by: the provider confirmed
    # delivery, or the contact clicked (many e-mail providers send no receipt; a click proves
    # the message arrived). Known since the receipt, or else the click.
    @staticmethod
    def delivered_q() -> Q:
        return Q(delivered_at__isnull=False) | Q(clicked_at__isnull=False)

    @staticmethod
    def delivered_known_at() -> Coalesce:
        return Coalesce("delivered_at", "clicked_at")

    @property
    def reached_contact(self) -> bool:
        """Whether any message went out; only such requests start a re-request cooldown."""
        return self.sent_at is not None

    def cooldown_ends_at(self, cooldown: timedelta) -> datetime | None:
        """End of the re-request cooldown this request started; ``None`` if it starts none.

        Active requests block new ones by themselves. An ended request starts a cooldown only
        if it reached the contact: one cancelled or failed before anything went out asked no
        one, so it does not stop the business asking again.
        """
        if self.is_active or not self.reached_contact or self.ended_at is None:
            return None
        return self.ended_at + cooldown

    def blocks_new_request(self, *, now: datetime, cooldown: timedelta) -> bool:
        if self.is_active:
            return True
        ends = self.cooldown_ends_at(cooldown)
        return ends is not None and now < ends

    @classmethod
    def sources(cls, to: str) -> frozenset[str]:
        """Statuses a request may move to ``to`` from, for conditional updates:
        ``filter(pk=pk, status__in=ReviewRequest.sources(SENT)).update(...)``."""
        return _sources(cls.TRANSITIONS, to)

    def transition(self, to: str, *, at: datetime, reason: str = "", detail: str = "") -> list[str]:
        """Move to ``to`` (validated), stamping its timestamp the first time it is reached.

        Entering an ended status records ``ended_at``/``ended_reason`` (kept from the first
        ending, e.g. ``clicked`` then ``completed``). Returns the fields to save.
        """
        if to not in self.TRANSITIONS[self.status]:
            raise InvalidTransition(f"review request {self.id}: {self.status} -> {to}")
        self.status = to
        changed = ["status", "updated_at"]
        stamp = self.STATUS_TIMESTAMPS.get(to)
        if stamp and getattr(self, stamp) is None:
            setattr(self, stamp, at)
            changed.append(stamp)
        if to in self.ENDED_STATUSES and self.ended_at is None:
            self.ended_at, self.ended_reason, self.ended_detail = at, reason, detail[:255]
            changed += ["ended_at", "ended_reason", "ended_detail"]
        return changed

    def reopen(self) -> list[str]:
        """Undo a delivery failure for a staff resend: back to ``sent`` if a message reached
        the contact, else ``scheduled``; the ending is forgotten. Returns the fields to save."""
        if self.status != self.Status.FAILED:
            raise InvalidTransition(f"review request {self.id}: only a failed request reopens")
        self.status = self.Status.SENT if self.sent_at else self.Status.SCHEDULED
        self.ended_at, self.ended_reason, self.ended_detail, self.failed_at = None, "", "", None
        return ["status", "ended_at", "ended_reason", "ended_detail", "failed_at", "updated_at"]

    def public_url(self) -> str:
        """The review landing page, absolute (``SITE_URL/r/<token>/``)."""
        return f"{settings.SITE_URL}/r/{self.token}/"

    def unsubscribe_url(self) -> str:
        return f"{settings.SITE_URL}/unsubscribe/{self.token}/"

    def cancel_open_messages(self, *, at: datetime) -> int:
        """Cancel every message not yet handed to a provider: one UPDATE. Returns the count."""
        return self.messages.filter(status__in=Message.CANCELLABLE_STATUSES).update(
            status=Message.Status.CANCELLED, cancelled_at=at, updated_at=at
        )


class Message(models.Model):
    """One outbound message (a step of a review request): a row the delivery engine claims.

    Created with the request: step 0 ``pending`` with ``due_at``; follow-ups ``planned`` with
    their channel and offset frozen from the business policy, given a ``due_at`` (and made
    ``pending``) only after the previous step was sent. The dispatcher claims due pending rows
    (partial index on ``due_at``), a send task claims its row by conditional UPDATE before
    calling the provider; ``to_address`` is captured at send time.
    """

    class Status(models.TextChoices):
        PLANNED = "planned", "Planned"
        PENDING = "pending", "Pending"
        QUEUED = "queued", "Queued"
        SENDING = "sending", "Sending"
        SENT = "sent", "Sent"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"
        UNKNOWN = "unknown", "Outcome unknown"
        CANCELLED = "cancelled", "Cancelled"

    # Not yet handed to a provider: cancelling these guarantees they are never sent.
    CANCELLABLE_STATUSES = frozenset({Status.PLANNED, Status.PENDING, Status.QUEUED})
    # An attempt whose outcome may still be recorded: the claim's own status, or unknown when
    # the sending lease expired before the (slow) outcome came back.
    ATTEMPT_OPEN_STATUSES = frozenset({Status.SENDING, Status.UNKNOWN})
    TRANSITIONS: dict[str, frozenset[str]] = {
        Status.PLANNED: frozenset({Status.PENDING, Status.CANCELLED}),
        Status.PENDING: frozenset({Status.QUEUED, Status.FAILED, Status.CANCELLED}),
        # back to pending: a lease expired before a send task claimed it
        Status.QUEUED: frozenset({Status.SENDING, Status.PENDING, Status.CANCELLED}),
        # pending: rejected-transient (retry with backoff); unknown: may have been sent;
        # cancelled: the send task found the contact opted out (or the request ended) after
        # claiming the row and before calling the provider, so nothing went out; planned: held
        # after the claim, the business lists no review site any more (``hold_reason``)
        Status.SENDING: frozenset(
            {
                Status.SENT,
                Status.PENDING,
                Status.FAILED,
                Status.UNKNOWN,
                Status.CANCELLED,
                Status.PLANNED,
            }
        ),
        Status.SENT: frozenset({Status.DELIVERED, Status.FAILED}),
        Status.DELIVERED: frozenset(),
        # reconciled by a status callback, or resent by staff (pending)
        Status.UNKNOWN: frozenset({Status.SENT, Status.DELIVERED, Status.FAILED, Status.PENDING}),
        # resent by staff
        Status.FAILED: frozenset({Status.PENDING}),
        Status.CANCELLED: frozenset(),
    }
    STATUS_TIMESTAMPS: dict[str, str] = {
        Status.QUEUED: "queued_at",
        Status.SENDING: "sending_at",
        Status.SENT: "sent_at",
        Status.DELIVERED: "delivered_at",
        Status.FAILED: "failed_at",
        Status.UNKNOWN: "unknown_at",
        Status.CANCELLED: "cancelled_at",
    }

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    review_request = models.ForeignKey(  # indexed by reviews_message_request_step_unique
        ReviewRequest, on_delete=models.CASCADE, related_name="messages", db_index=False
    )
    step = models.PositiveSmallIntegerField(help_text="0: the first message; 1, 2...: follow-ups.")
    channel = models.CharField(max_length=10, choices=Channel.choices)
    status = models.CharField(max_length=20, choices=Status.choices)
    planned_offset = models.DurationField(
        default=timedelta(0), help_text="After the first message was sent (0 for step 0)."
    )
    due_at = models.DateTimeField(null=True, blank=True)
    to_address = models.CharField(
        max_length=254, blank=True, help_text="E.164 or e-mail, captured at send time."
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.TextField(blank=True)
    last_error_code = models.CharField(max_length=64, blank=True)
    provider = models.CharField(max_length=40, blank=True)
    provider_message_id = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    sending_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)
    unknown_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["review_request", "step"]
        constraints = [
            models.UniqueConstraint(
                fields=["review_request", "step"], name="reviews_message_request_step_unique"
            ),
            models.CheckConstraint(
                condition=~Q(status="pending") | Q(due_at__isnull=False),
                name="reviews_message_pending_has_due_at",
            ),
        ]
        indexes = [
            # The dispatcher's claim: due pending rows only, so the index stays small, in the
            # claim's order (due_at, id), so a claim reads its batch, not every due row.
            models.Index(
                fields=["due_at", "id"],
                condition=Q(status="pending"),
                name="reviews_message_due_claim",
            ),
            # Lease recovery of rows stuck in queued/sending.
            models.Index(
                fields=["status", "updated_at"],
                condition=Q(status__in=["queued", "sending"]),
                name="reviews_message_in_flight",
            ),
            # The dashboard's failure reasons: failures of a period grouped by code.
            models.Index(
                fields=["failed_at", "last_error_code", "review_request"],
                condition=Q(failed_at__isnull=False),
                name="reviews_message_failed_day",
            ),
            # Provider status callbacks look messages up by the provider's id, and staff search
            # for it (without knowing the provider): the id leads.
            models.Index(
                fields=["provider_message_id", "provider"],
                condition=~Q(provider_message_id=""),
                name="reviews_message_provider_ref",
            ),
            # The admin's list, newest first.
            models.Index(fields=["-created_at", "-id"], name="reviews_message_recent"),
        ]

    def __str__(self) -> str:
        return f"Message {self.step} of {self.review_request_id} by {self.channel} ({self.status})"

    @classmethod
    def sources(cls, to: str) -> frozenset[str]:
        """Statuses a message may move to ``to`` from, for conditional UPDATE claims:
        ``filter(pk=pk, status__in=Message.sources(SENDING)).update(...)``."""
        return _sources(cls.TRANSITIONS, to)

    def refusal(self) -> str:
        """Why this message must not go out now; ``""`` when it may: the one statement of the
        pre-send rule (its request is still active, and the contact can still receive its
        channel), refusals cancel the message; ``hold_reason`` says when it must wait instead.
        Needs ``review_request`` and its ``contact`` loaded."""
        request = self.review_request
        if not request.is_active:
            return f"not sent: the request ended ({request.status}) before it went out"
        if not request.contact.can_receive(self.channel):
            return request.contact.unreachable_reason(self.channel)
        return ""

    # A message held until the business lists a review site: ``planned`` with no ``due_at``,
    # this ``last_error_code`` and ``WAITING_FOR_REVIEW_SITE_TEXT`` as ``last_error``; adding a
    # site makes it ``pending`` (``messages_release_waiting``).
    WAITING_FOR_REVIEW_SITE = "waiting_for_review_site"
    WAITING_FOR_REVIEW_SITE_TEXT = (
        "Waiting for a review site: the business has not listed one yet. It goes out once a "
        "review site is added (Settings, Review sites), within the sending hours."
    )

    @classmethod
    def hold_reason(cls, *, has_review_site: bool) -> str:
        """Why this message must wait (not be cancelled) before it goes out; ``""`` when it
        need not: the other half of the pre-send rule, after ``refusal``. A review request
        sends people to the business's review sites, so none leaves while it lists none."""
        return "" if has_review_site else cls.WAITING_FOR_REVIEW_SITE_TEXT

    @property
    def waiting_for_review_site(self) -> bool:
        return (
            self.status == self.Status.PLANNED
            and self.last_error_code == self.WAITING_FOR_REVIEW_SITE
        )

    def transition(self, to: str, *, at: datetime) -> list[str]:
        """Move to ``to`` (validated), stamping its timestamp; returns the fields to save."""
        if to not in self.TRANSITIONS[self.status]:
            raise InvalidTransition(f"message {self.id}: {self.status} -> {to}")
        self.status = to
        changed = ["status", "updated_at"]
        stamp = self.STATUS_TIMESTAMPS.get(to)
        if stamp:
            setattr(self, stamp, at)
            changed.append(stamp)
        return changed


def messages_for(
    review_request: ReviewRequest,
    steps: Iterable[PlannedStep],
    *,
    due_at: datetime,
    hold_reason: str = "",
) -> list[Message]:
    """The unsaved message rows of a new request: step 0 pending at ``due_at``, the rest planned.
    With a ``hold_reason`` (``Message.hold_reason``), step 0 is held instead: planned, waiting
    for a review site."""
    messages = [
        Message(
            review_request=review_request,
            step=planned.step,
            channel=planned.channel,
            planned_offset=planned.offset,
            status=Message.Status.PENDING if planned.step == 0 else Message.Status.PLANNED,
            due_at=due_at if planned.step == 0 else None,
        )
        for planned in steps
    ]
    if hold_reason and messages:
        first = messages[0]
        first.status, first.due_at = Message.Status.PLANNED, None
        first.last_error_code, first.last_error = Message.WAITING_FOR_REVIEW_SITE, hold_reason
    return messages


# --- Engagement: clicks and private feedback ------------------------------------------------------


class Click(models.Model):
    """One fetch of a review-site link through ``/r/<token>/go/<site>/``, human or not.

    ``counted`` is true for a human click (it may end the request as ``clicked``);
    ``ignored_reason`` says why a fetch was not counted (``reviews.click_filter``).
    """

    id = models.BigAutoField(primary_key=True)
    review_request = models.ForeignKey(  # indexed by reviews_click_request
        ReviewRequest, on_delete=models.CASCADE, related_name="clicks", db_index=False
    )
    site = models.ForeignKey(
        ReviewSite, on_delete=models.SET_NULL, null=True, blank=True, related_name="clicks"
    )
    url = models.URLField(max_length=500, help_text="Where the visitor was sent.")
    method = models.CharField(max_length=8)
    user_agent = models.CharField(max_length=500, blank=True)
    ip_hash = models.CharField(
        max_length=64, blank=True, help_text="Keyed hash of the IP address (never the address)."
    )
    counted = models.BooleanField(default=False)
    ignored_reason = models.CharField(max_length=40, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["review_request", "-created_at"], name="reviews_click_request"),
        ]

    def __str__(self) -> str:
        kind = "click" if self.counted else f"ignored fetch ({self.ignored_reason})"
        return f"{kind} on {self.url}"


class Feedback(models.Model):
    """Private feedback left on the review page: an extra option, never instead of a site."""

    MAX_LENGTH = 2000

    id = models.BigAutoField(primary_key=True)
    review_request = models.ForeignKey(
        ReviewRequest, on_delete=models.CASCADE, related_name="feedback"
    )
    text = models.TextField(max_length=MAX_LENGTH)
    ip_hash = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # When the owner was told by e-mail (``feedback_notify_owner``): set once, so a task run
    # twice sends one e-mail.
    notified_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "feedback"

    def __str__(self) -> str:
        return f"Feedback on {self.review_request_id}: {self.text[:40]}"
