"""Events (the outbox) and their delivery to webhook subscriptions.

An ``Event`` row is written in the transaction of the change it reports (``services.event_record``)
with one ``WebhookDelivery`` per active subscription of its owner to its type; the delivery task
(``services.webhooks_deliver_due``) posts them. Nothing here knows what a review request is: the
caller builds ``data``.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q


class EventType(models.TextChoices):
    """Every event type, named once: subscriptions, the API and docs/events.md use these."""

    REVIEW_REQUEST_SENT = "review_request.sent", "Review request sent"
    REVIEW_REQUEST_DELIVERED = "review_request.delivered", "Review request delivered"
    REVIEW_REQUEST_CLICKED = "review_request.clicked", "Review link clicked"
    REVIEW_REQUEST_COMPLETED = "review_request.completed", "Review request completed"
    REVIEW_REQUEST_FAILED = "review_request.failed", "Review request failed"
    REVIEW_REQUEST_CANCELLED = "review_request.cancelled", "Review request cancelled"
    CONTACT_OPTED_OUT = "contact.opted_out", "Contact opted out"
    FEEDBACK_RECEIVED = "feedback.received", "Private feedback received"


class Event(models.Model):
    """Something that happened to an owner's data, as sent to webhooks: ``{id, type,
    occurred_at, data}``. The id is the receiver's deduplication key (``webhook-id``)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Covered by the (owner, occurred_at) index.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    type = models.CharField(max_length=40, choices=EventType.choices)
    occurred_at = models.DateTimeField()
    data = models.JSONField()

    class Meta:
        indexes = [models.Index(fields=["owner", "-occurred_at"], name="event_owner_time")]
        ordering = ["-occurred_at"]

    def __str__(self) -> str:
        return f"{self.type} {self.id}"


class WebhookSubscription(models.Model):
    """An owner's REST hook: events of one type are posted to ``target_url``, signed with
    ``secret`` (Standard Webhooks, ``whsec_`` + base64 key, shown once at creation).

    ``failing_since``: the first failed attempt since the last success; a subscription failing
    for ``WEBHOOK_DISABLE_AFTER_DAYS`` gets ``disabled_at`` and receives nothing more."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Covered by the (owner, event) index.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="webhook_subscriptions",
        db_index=False,
    )
    # Who subscribed: a member's subscription receives only the events of the locations they
    # reach (``accounts.access``); NULL: the owner (and rows made before members existed).
    subscriber = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="+",
        null=True,
        blank=True,
    )
    # Only the events of this location (NULL: of every location the subscriber reaches).
    location = models.ForeignKey(
        "accounts.Location", on_delete=models.CASCADE, related_name="+", null=True, blank=True
    )
    event = models.CharField(max_length=40, choices=EventType.choices)
    target_url = models.URLField(max_length=2000)
    secret = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)
    failing_since = models.DateTimeField(null=True, blank=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.CharField(max_length=255, blank=True)

    class Meta:
        indexes = [models.Index(fields=["owner", "event"], name="webhook_sub_owner_event")]
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.event} → {self.target_url}"

    @property
    def is_active(self) -> bool:
        return self.disabled_at is None


class WebhookDelivery(models.Model):
    """One event to one subscription. ``pending`` until a 2xx (``delivered``) or until retries
    run out or the subscription is disabled (``failed``). ``next_attempt_at`` is also the
    lease: it is pushed past the call's time limit before each attempt, so a worker killed
    mid-call leaves the row due again later (at least once)."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    # Covered by the unique (event, subscription) constraint.
    event = models.ForeignKey(Event, on_delete=models.CASCADE, db_index=False)
    subscription = models.ForeignKey(
        WebhookSubscription, on_delete=models.CASCADE, related_name="deliveries"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "webhook deliveries"
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["event", "subscription"], name="webhook_delivery_event_subscription"
            ),
            models.CheckConstraint(
                condition=~Q(status="pending") | Q(next_attempt_at__isnull=False),
                name="webhook_delivery_pending_has_time",
            ),
        ]
        indexes = [
            # The delivery task's scan: due pending rows, oldest first.
            models.Index(
                fields=["next_attempt_at"],
                condition=Q(status="pending"),
                name="webhook_delivery_due",
            )
        ]

    def __str__(self) -> str:
        return f"{self.event_id} → {self.subscription_id} ({self.status})"
