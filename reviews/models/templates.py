"""A business's own wording for its messages (``MessageTemplate``): checked when saved,
never rendered by a template engine."""

from __future__ import annotations

import re
import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator
from django.db import models

from accounts.models import Location

from .. import merge_fields, sms_segments
from .business import MAX_FOLLOW_UPS
from .contacts import Channel
from .locations import check_location, location_key

STOP_LINE = "Reply STOP to opt out"
_MENTIONS_STOP = re.compile(r"\bstop\b", re.IGNORECASE)
MAX_SMS_TEMPLATE_CHARS = 1000
MAX_EMAIL_TEMPLATE_CHARS = 5000

# Sample values for the admin's segment count: a long-ish name and a real-length review link.
SAMPLE_MERGE_VALUES = {
    "first_name": "Alexandra",
    "contact_name": "Alexandra Smith",
    "company_name": "Smith & Sons",
    "review_link": "https://reviews.example.com/r/AbCdEfGhIjKlMnOpQrStUv/",
}


class MessageTemplate(models.Model):
    """A business's own wording for one step on one channel, for one location or (no
    location) for all of them; a location's own wording wins, then the account's, then the
    shipped defaults (``templates/messages/``).

    Written by owners, so never rendered by a template engine: ``reviews.merge_fields``
    substitutes the known ``{fields}`` and nothing else. ``clean()`` refuses unknown fields,
    requires ``{review_link}``, and for SMS requires the business to be named and appends
    "Reply STOP to opt out" when the text offers no way to stop.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(  # indexed by reviews_template_owner_location_channel_step
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="message_templates",
        db_index=False,
    )
    # NULL: the account's wording, for every location without its own.
    location = models.ForeignKey(
        Location,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="message_templates",
    )
    channel = models.CharField(max_length=10, choices=Channel.choices)
    step = models.PositiveSmallIntegerField(
        validators=[MaxValueValidator(MAX_FOLLOW_UPS)],
        help_text="0: the first message; 1, 2...: the follow-ups.",
    )
    subject = models.CharField(
        max_length=200, blank=True, help_text="E-mail only; merge fields allowed."
    )
    body = models.TextField(
        help_text="Plain text with merge fields: "
        + ", ".join(f"{{{name}}}" for name in merge_fields.MERGE_FIELDS)
        + ". For e-mail the HTML part is made from it."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["owner", "channel", "step"]
        constraints = [
            models.UniqueConstraint(
                "owner",
                location_key(),
                "channel",
                "step",
                name="reviews_template_owner_location_channel_step",
                violation_error_message="Wording for this step already exists.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_channel_display()} {self.step_label} of {self.owner}"

    def _owner_or_none(self):
        return getattr(self, "owner", None)  # a new admin form may not have one yet

    @property
    def step_label(self) -> str:
        return "first message" if self.step == 0 else f"follow-up {self.step}"

    def clean(self) -> None:
        super().clean()
        check_location(self)
        errors: dict[str, list[str]] = {}
        body = (self.body or "").replace("\r\n", "\n").strip()
        limit = MAX_SMS_TEMPLATE_CHARS if self.channel == Channel.SMS else MAX_EMAIL_TEMPLATE_CHARS
        try:
            used = merge_fields.fields_used(body)
        except merge_fields.MergeFieldError as exc:
            errors.setdefault("body", []).append(str(exc))
            used = []
        if body and not errors and "review_link" not in used:
            errors.setdefault("body", []).append("Must contain {review_link}.")
        if len(body) > limit:
            errors.setdefault("body", []).append(f"At most {limit} characters.")
        if self.channel == Channel.SMS:
            self.subject = ""
            business = (getattr(self._owner_or_none(), "business_name", "") or "").strip()
            names_business = "business_name" in used or (
                business and business.casefold() in body.casefold()
            )
            if body and not errors and not names_business:
                errors.setdefault("body", []).append(
                    "An SMS must name the business: add {business_name}."
                )
            if body and not _MENTIONS_STOP.search(body):
                body = f"{body}\n{STOP_LINE}"
        else:
            subject = " ".join((self.subject or "").split())
            if not subject:
                errors.setdefault("subject", []).append("An e-mail needs a subject.")
            else:
                try:
                    merge_fields.fields_used(subject)
                except merge_fields.MergeFieldError as exc:
                    errors.setdefault("subject", []).append(str(exc))
            self.subject = subject
        self.body = body
        if errors:
            raise ValidationError(errors)

    def sample_segments(self) -> sms_segments.SegmentCount | None:
        """The SMS segment count with sample values (the admin shows it); None for e-mail."""
        if self.channel != Channel.SMS:
            return None
        values = {
            **SAMPLE_MERGE_VALUES,
            "business_name": getattr(self._owner_or_none(), "business_name", "") or "Your business",
        }
        try:
            text = merge_fields.render(self.body, values)
        except merge_fields.MergeFieldError:
            return None
        return sms_segments.count_segments(text)
