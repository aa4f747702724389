"""Contacts: the people a business asks for a review, their channels and opt-outs, and the
opt-out audit."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from contact_input.normalize import MAX_METADATA_BYTES, ContactInput, metadata_size


class Channel(models.TextChoices):
    SMS = "sms", "SMS"
    EMAIL = "email", "e-mail"


# --- Contacts -------------------------------------------------------------------------------------


class Contact(models.Model):
    """A person a business may ask for a review. Deduplicated per owner by e-mail and by phone.

    The per-owner unique constraints on the normalised e-mail and on the E.164 phone (partial:
    only where present) are the backstop that makes two concurrent adds of one person converge
    on one row; ``reviews.services.contact_add`` is the only writer of these keys.
    """

    class Source(models.TextChoices):
        API = "api", "Connector API"
        ADMIN = "admin", "Admin"
        IMPORT = "import", "CSV import"

    class OptOutSource(models.TextChoices):
        SMS_REPLY = "sms_reply", "Replied STOP (or similar) to an SMS"
        EMAIL_UNSUBSCRIBE = "email_unsubscribe", "Unsubscribe link or one-click header"
        EMAIL_COMPLAINT = "email_complaint", "Marked an e-mail as spam"
        EMAIL_BOUNCE = "email_bounce", "The e-mail address bounced (hard bounce)"
        STAFF = "staff", "Staff"
        OWNER = "owner", "Business owner"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(  # indexed by reviews_contact_recent (owner, -created_at)
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="contacts", db_index=False
    )
    first_name = models.CharField(max_length=100, blank=True)
    last_name = models.CharField(max_length=100, blank=True)
    company_name = models.CharField(max_length=200, blank=True)
    email = models.EmailField(max_length=254, blank=True, help_text="As given (trimmed).")
    email_normalized = models.CharField(
        max_length=254, blank=True, editable=False, help_text="Lower-cased: the dedup key."
    )
    phone = models.CharField(max_length=16, blank=True, help_text="E.164, e.g. +14155552671.")
    metadata = models.JSONField(default=dict, blank=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.API)
    sms_opted_out_at = models.DateTimeField(null=True, blank=True)
    sms_opt_out_source = models.CharField(max_length=20, choices=OptOutSource.choices, blank=True)
    email_opted_out_at = models.DateTimeField(null=True, blank=True)
    email_opt_out_source = models.CharField(max_length=20, choices=OptOutSource.choices, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "email_normalized"],
                condition=~Q(email_normalized=""),
                name="reviews_contact_owner_email_unique",
            ),
            models.UniqueConstraint(
                fields=["owner", "phone"],
                condition=~Q(phone=""),
                name="reviews_contact_owner_phone_unique",
            ),
            models.CheckConstraint(
                condition=~Q(email_normalized="") | ~Q(phone=""),
                name="reviews_contact_has_email_or_phone",
            ),
            models.CheckConstraint(
                condition=Q(email="", email_normalized="")
                | (~Q(email="") & ~Q(email_normalized="")),
                name="reviews_contact_email_and_key_together",
            ),
        ]
        indexes = [
            models.Index(fields=["owner", "-created_at"], name="reviews_contact_recent"),
            # The admin's list, newest first across every owner. Searches by name, e-mail or
            # phone use a trigram index on PostgreSQL (migration 0006; not in the model state,
            # as SQLite has no such index).
            models.Index(fields=["-created_at", "-id"], name="reviews_contact_created"),
            # The admin list's filters, newest first among the rows they keep: opted out (of
            # SMS, of e-mail, of either: a few per cent of contacts), and each channel.
            models.Index(
                fields=["-created_at", "-id"],
                condition=Q(sms_opted_out_at__isnull=False) | Q(email_opted_out_at__isnull=False),
                name="reviews_contact_opted_out",
            ),
            models.Index(
                fields=["-created_at", "-id"], condition=~Q(phone=""), name="reviews_contact_sms"
            ),
            models.Index(
                fields=["-created_at", "-id"],
                condition=~Q(email_normalized=""),
                name="reviews_contact_email",
            ),
            # The admin's search for one whole address across businesses (the unique keys lead
            # with the owner, and the trigram index's cost for an equality grows with the table).
            models.Index(
                fields=["email_normalized"],
                condition=~Q(email_normalized=""),
                name="reviews_contact_email_key",
            ),
            models.Index(
                fields=["phone"], condition=~Q(phone=""), name="reviews_contact_phone_key"
            ),
        ]

    def __str__(self) -> str:
        return self.display_name

    @property
    def full_name(self) -> str:
        return f"{self.first_name} {self.last_name}".strip()

    @property
    def display_name(self) -> str:
        return self.full_name or self.email or self.phone

    def address_for(self, channel: str) -> str:
        return self.phone if channel == Channel.SMS else self.email

    def opted_out_of(self, channel: str) -> bool:
        if channel == Channel.SMS:
            return self.sms_opted_out_at is not None
        return self.email_opted_out_at is not None

    def can_receive(self, channel: str) -> bool:
        return bool(self.address_for(channel)) and not self.opted_out_of(channel)

    def reachable_channels(self) -> list[Channel]:
        return [c for c in (Channel.SMS, Channel.EMAIL) if self.can_receive(c)]

    def unreachable_reason(self, channel: str) -> str:
        """Why nothing goes out on ``channel`` (when ``can_receive`` says it cannot)."""
        if not self.address_for(channel):
            return f"not sent: the contact has no {Channel(channel).label} address"
        return f"not sent: the contact opted out of {Channel(channel).label}"

    def opt_out(self, channel: str, *, source: str, at: datetime) -> list[str]:
        """Record an opt-out (the first one counts); returns the changed fields to save."""
        prefix = "sms" if channel == Channel.SMS else "email"
        if getattr(self, f"{prefix}_opted_out_at") is not None:
            return []
        setattr(self, f"{prefix}_opted_out_at", at)
        setattr(self, f"{prefix}_opt_out_source", source)
        return [f"{prefix}_opted_out_at", f"{prefix}_opt_out_source", "updated_at"]

    def opt_in(self, channel: str) -> list[str]:
        prefix = "sms" if channel == Channel.SMS else "email"
        setattr(self, f"{prefix}_opted_out_at", None)
        setattr(self, f"{prefix}_opt_out_source", "")
        return [f"{prefix}_opted_out_at", f"{prefix}_opt_out_source", "updated_at"]

    def apply_input(self, data: ContactInput, *, take_phone: bool = True) -> list[str]:
        """Update with the non-empty values given; metadata is merged (new keys win).

        ``take_phone=False`` keeps the stored phone (the new one belongs to another contact).
        Returns the changed fields. Raises ``ValidationError`` when the merged metadata would
        exceed the size limit.
        """
        changed = []
        for name in ("first_name", "last_name", "company_name"):
            value = getattr(data, name)
            if value and value != getattr(self, name):
                setattr(self, name, value)
                changed.append(name)
        if data.email and data.email != self.email:
            self.email, self.email_normalized = data.email, data.email_normalized
            changed += ["email", "email_normalized"]
        if take_phone and data.phone and data.phone != self.phone:
            self.phone = data.phone
            changed.append("phone")
        if data.metadata:
            merged = {**(self.metadata or {}), **data.metadata}
            if merged != self.metadata:
                if metadata_size(merged) > MAX_METADATA_BYTES:
                    raise ValidationError(
                        {
                            "metadata": "Together with the metadata already stored for this "
                            "contact it would exceed 16 KB; send fewer or shorter keys."
                        }
                    )
                self.metadata = merged
                changed.append("metadata")
        if changed:
            changed.append("updated_at")
        return changed


# --- Opt-out audit --------------------------------------------------------------------------------


class OptOutEvent(models.Model):
    """One opt-out or opt-in, as it happened: kept for the consent-record retention period
    (``OPT_OUT_AUDIT_RETENTION_DAYS``, 4 years), even after the contact is deleted.

    ``external_id`` (a Twilio MessageSid, an ESP event id) makes a replayed webhook record
    nothing new.
    """

    class Action(models.TextChoices):
        OPT_OUT = "opt_out", "Opted out"
        OPT_IN = "opt_in", "Opted back in"

    id = models.BigAutoField(primary_key=True)
    owner = models.ForeignKey(  # indexed by reviews_optout_owner_recent (owner, created_at)
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="opt_out_events",
        db_index=False,
    )
    contact = models.ForeignKey(
        Contact, on_delete=models.SET_NULL, null=True, blank=True, related_name="opt_out_events"
    )
    channel = models.CharField(max_length=10, choices=Channel.choices)
    action = models.CharField(max_length=10, choices=Action.choices)
    source = models.CharField(max_length=20, choices=Contact.OptOutSource.choices)
    address = models.CharField(max_length=254, help_text="The phone number or e-mail address.")
    raw_text = models.TextField(
        blank=True, help_text="What the person sent (SMS reply), or the event's description."
    )
    external_id = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "channel", "action", "external_id"],
                condition=~Q(external_id=""),
                name="reviews_optout_event_once",
            ),
        ]
        indexes = [
            # One business's audit: its dashboard's opt-outs of a period, a request's timeline,
            # the owner's cascade.
            models.Index(fields=["owner", "created_at"], name="reviews_optout_owner_recent"),
            # The admin's search: one address, across businesses.
            models.Index(fields=["address"], name="reviews_optout_search"),
        ]

    def __str__(self) -> str:
        return f"{self.get_action_display()} of {self.channel} by {self.address} ({self.source})"
