"""Connector API state: the Idempotency-Key store."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class IdempotencyKey(models.Model):
    """The first response to a request carrying ``Idempotency-Key``, per (user, key).

    Claimed (``in_progress``) in its own committed transaction before the work runs, so a
    concurrent duplicate sees the claim; completed (``done``, with the response) after. Kept for
    ``IDEMPOTENCY_KEY_TTL_HOURS``. See ``connector_api/idempotency.py``.
    """

    class State(models.TextChoices):
        IN_PROGRESS = "in_progress", "In progress"
        DONE = "done", "Done"

    # No index of its own: the unique (owner, key) constraint's index serves owner lookups, and
    # every API write inserts a row here (one index less to maintain per request).
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="idempotency_keys",
        db_index=False,
    )
    key = models.CharField(max_length=255)
    endpoint = models.CharField(max_length=100)
    fingerprint = models.CharField(
        max_length=64, help_text="sha256 of the endpoint and the canonical JSON body."
    )
    state = models.CharField(max_length=20, choices=State.choices, default=State.IN_PROGRESS)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    # JSON as text, not jsonb: jsonb reorders keys, and a replay should be the same bytes.
    response_body = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    locked_at = models.DateTimeField(
        default=timezone.now, help_text="When the running request claimed the key."
    )
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "key"], name="connector_idempotency_key_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.state})"
