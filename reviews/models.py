"""Review data: review sites, business review settings, contacts, review requests, messages.

Row rules and state transitions live here (STYLE.md); workflows that touch several rows live in
``reviews/services/`` (one module per concern). The data model is described in
``docs/architecture.md``.
"""

from __future__ import annotations

import re
import secrets
import uuid
import zoneinfo
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator
from django.db import models
from django.db.models import Q

from . import merge_fields, sms_segments
from .normalize import MAX_DELAY_HOURS, MAX_METADATA_BYTES, ContactInput, metadata_size
from .sending_windows import SendingWindow, next_allowed_time, recipient_time_zones


class ReviewSite(models.Model):
    """One public review site of a business. Every contact sees every site, equally.

    No gating on sentiment (Google policy, FTC 16 CFR 465, Trustpilot rules), and no Yelp:
    Yelp forbids soliciting reviews and demotes businesses that do.
    """

    class Kind(models.TextChoices):
        GOOGLE = "google", "Google"
        FACEBOOK = "facebook", "Facebook"
        TRUSTPILOT = "trustpilot", "Trustpilot"
        CUSTOM = "custom", "Other site"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(  # indexed by reviews_site_owner_url_unique (owner, url)
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="review_sites",
        db_index=False,
    )
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.CUSTOM)
    label = models.CharField(max_length=80, help_text="Shown on the review page, e.g. Google.")
    url = models.URLField(max_length=500)
    position = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["owner", "position", "created_at"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "url"], name="reviews_site_owner_url_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.label}: {self.url}"

    def clean(self) -> None:
        super().clean()
        if self.url and ReviewSite.kind_for_url(self.url) is None:
            raise ValidationError({"url": "Yelp does not allow asking customers for reviews."})

    @staticmethod
    def kind_for_url(url: str) -> str | None:
        """The site kind a URL points at; None for sites we must never solicit (Yelp)."""
        host = (urlsplit(url).hostname or "").lower()
        labels = host.split(".")
        if "yelp" in labels:
            return None
        if "google" in labels or host in {"g.page", "goo.gl", "maps.app.goo.gl", "g.co"}:
            return ReviewSite.Kind.GOOGLE
        if host.endswith(("facebook.com", "fb.com", "fb.me")):
            return ReviewSite.Kind.FACEBOOK
        if host.endswith("trustpilot.com"):
            return ReviewSite.Kind.TRUSTPILOT
        return ReviewSite.Kind.CUSTOM


class Channel(models.TextChoices):
    SMS = "sms", "SMS"
    EMAIL = "email", "e-mail"


# --- Business review settings ---------------------------------------------------------------------


def default_follow_up_offsets() -> list[int]:
    return [72, 168]  # +3 and +7 days after the first message was sent


MAX_FOLLOW_UPS = 5


@dataclass(frozen=True)
class PlannedStep:
    step: int
    channel: str
    offset: timedelta  # after the first message was sent; 0 for the first message


@dataclass(frozen=True)
class SendTime:
    """When a message may go out: ``at``; ``requested`` if the sending window moved it."""

    at: datetime
    requested: datetime
    window: SendingWindow | None = None
    zones: tuple[str, ...] = ()

    @property
    def shifted(self) -> bool:
        return self.at != self.requested


class BusinessSettings(models.Model):
    """A business's review-request policy: channels, follow-ups, cooldown, sending window.

    One row per owner, created by ``business_create`` or on first use
    (``BusinessSettings.for_owner``). Message wording per step lives in ``MessageTemplate``.
    """

    class InitialChannel(models.TextChoices):
        SMS = "sms", "SMS when a mobile number is known, else e-mail"
        EMAIL = "email", "E-mail when an address is known, else SMS"

    class WindowAppliesTo(models.TextChoices):
        SMS = "sms", "SMS only"
        ALL = "all", "SMS and e-mail"
        NONE = "none", "No quiet hours"

    owner = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="review_settings",
    )
    initial_channel = models.CharField(
        max_length=10, choices=InitialChannel.choices, default=InitialChannel.SMS
    )
    follow_up_offsets_hours = models.JSONField(
        default=default_follow_up_offsets,
        blank=True,
        help_text="Hours after the first message at which follow-ups go out, e.g. [72, 168] "
        "for +3 and +7 days. [] sends no follow-up.",
    )
    follow_up_other_channel = models.BooleanField(
        default=True,
        help_text="When the contact has both an e-mail and a mobile number, send follow-ups "
        "by the channel the first message did not use.",
    )
    cooldown_days = models.PositiveSmallIntegerField(
        default=90,
        validators=[MaxValueValidator(3650)],
        help_text="After a request that reached the contact ends, adding them again creates no "
        "new request for this many days. 0: only an active request blocks a new one.",
    )
    send_window_start = models.TimeField(
        default=time(8, 0), help_text="Messages go out from this time (recipient's clock)."
    )
    send_window_end = models.TimeField(
        default=time(21, 0),
        help_text="... until this time. An end before the start spans midnight.",
    )
    send_window_applies_to = models.CharField(
        max_length=10, choices=WindowAppliesTo.choices, default=WindowAppliesTo.SMS
    )
    default_delay_hours = models.PositiveIntegerField(
        default=0,
        validators=[MaxValueValidator(MAX_DELAY_HOURS)],
        help_text="Delay used when a contact is added without delay_hours.",
    )
    sender_name = models.CharField(
        max_length=100,
        blank=True,
        help_text="The From name of e-mails; the business name when blank.",
    )
    postal_address = models.TextField(
        max_length=300,
        blank=True,
        help_text="Printed in the footer of every e-mail (CAN-SPAM asks for a valid postal "
        "address).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "business review settings"
        verbose_name_plural = "business review settings"
        constraints = [
            models.CheckConstraint(
                condition=Q(default_delay_hours__lte=MAX_DELAY_HOURS),
                name="reviews_settings_default_delay_max",
            ),
        ]

    def __str__(self) -> str:
        return f"Review settings of {self.owner}"

    # Read on every API request and every send; changed rarely (the owner's settings page).
    CACHE_SECONDS = 300

    @classmethod
    def cache_key(cls, owner_id) -> str:
        return f"reviews:business-settings:{owner_id}"

    @classmethod
    def for_owner(cls, owner) -> BusinessSettings:
        """The owner's settings (read-only: save changes through ``business_settings_update``),
        created with the defaults on first use.

        Served from the cache when it has them: every save or delete invalidates the entry
        (``reviews.receivers``) safely against concurrent readers (``config.versioned_cache``).
        """
        from core import versioned_cache

        read = versioned_cache.read(cls.cache_key(owner.pk))
        if read.value is not None:
            obj = versioned_cache.model_from_values(cls, read.value)
        else:
            obj, _ = cls.objects.get_or_create(owner=owner)
            versioned_cache.write(
                read, versioned_cache.model_values(obj), timeout=cls.CACHE_SECONDS
            )
        obj.owner = owner  # spare a query for the time zone
        return obj

    @classmethod
    def invalidate_cached(cls, owner_id) -> None:
        from core import versioned_cache

        versioned_cache.invalidate([cls.cache_key(owner_id)], ttl=cls.CACHE_SECONDS)

    def clean(self) -> None:
        super().clean()
        offsets = self.follow_up_offsets_hours
        if not isinstance(offsets, list) or not all(
            isinstance(h, int) and not isinstance(h, bool) for h in offsets
        ):
            raise ValidationError(
                {"follow_up_offsets_hours": "A list of whole hours, e.g. [72, 168]."}
            )
        if len(offsets) > MAX_FOLLOW_UPS:
            raise ValidationError(
                {"follow_up_offsets_hours": f"At most {MAX_FOLLOW_UPS} follow-ups."}
            )
        if any(h < 1 or h > MAX_DELAY_HOURS for h in offsets) or offsets != sorted(set(offsets)):
            raise ValidationError(
                {
                    "follow_up_offsets_hours": "Each offset from 1 to 8760 hours, increasing "
                    "(each follow-up after the previous one)."
                }
            )
        if self.send_window_start == self.send_window_end and (
            self.send_window_applies_to != self.WindowAppliesTo.NONE
        ):
            raise ValidationError(
                {"send_window_end": "Must differ from the start (or turn quiet hours off)."}
            )

    # --- Policy ----------------------------------------------------------------------------------

    @property
    def cooldown(self) -> timedelta:
        return timedelta(days=self.cooldown_days)

    @property
    def window(self) -> SendingWindow:
        return SendingWindow(self.send_window_start, self.send_window_end)

    def window_applies(self, channel: str) -> bool:
        if self.send_window_applies_to == self.WindowAppliesTo.ALL:
            return True
        return self.send_window_applies_to == self.WindowAppliesTo.SMS and channel == Channel.SMS

    def plan_steps(self, contact: Contact) -> list[PlannedStep]:
        """The channel of each message, first one and follow-ups; ``[]`` when unreachable.

        First message: the preferred channel (``initial_channel``) if the contact can receive
        it, else the other one. Follow-ups: the other channel when the contact can receive both
        and ``follow_up_other_channel`` is on, else the first message's channel.
        """
        reachable = contact.reachable_channels()
        if not reachable:
            return []
        preferred = Channel(self.initial_channel)
        first = preferred if preferred in reachable else next(iter(reachable))
        other = Channel.EMAIL if first == Channel.SMS else Channel.SMS
        follow = other if self.follow_up_other_channel and other in reachable else first
        steps = [PlannedStep(0, first, timedelta(0))]
        for index, hours in enumerate(self.follow_up_offsets_hours, start=1):
            steps.append(PlannedStep(index, follow, timedelta(hours=hours)))
        return steps

    def send_time(self, *, channel: str, requested: datetime, phone: str = "") -> SendTime:
        """The first allowed instant ``>= requested`` for a message on ``channel``.

        The recipient's clock decides: the time zones of the phone number, all of them when it
        has several (the strictest reading); the business's time zone when there is no phone,
        the number is unknown to the time-zone data, or its zones share no allowed hour.
        """
        if not self.window_applies(channel):
            return SendTime(at=requested, requested=requested)
        window = self.window
        zones = recipient_time_zones(phone)
        at = next_allowed_time(requested, window, zones) if zones else None
        if at is None:
            zones = (zoneinfo.ZoneInfo(self.owner.time_zone),)
            at = next_allowed_time(requested, window, zones)
        assert at is not None  # one zone always has an allowed time within a day
        return SendTime(
            at=at, requested=requested, window=window, zones=tuple(z.key for z in zones)
        )


# --- Contacts -------------------------------------------------------------------------------------


class Contact(models.Model):
    """A person a business may ask for a review. Deduplicated per owner by e-mail and by phone.

    The per-owner unique constraints on the normalised e-mail and on the E.164 phone (partial:
    only where present) are the backstop that makes two concurrent adds of one person converge
    on one row; ``reviews.services.add_contact`` is the only writer of these keys.
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
        indexes = [models.Index(fields=["owner", "-created_at"], name="reviews_contact_recent")]

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
    """One request for a review sent to one contact: the first message and its follow-ups.

    At most one *active* request per contact, enforced by a partial unique constraint, so even
    a race cannot schedule two. Every status has a timestamp recording when it was first
    reached; ``ended_at``/``ended_reason`` say when and why the sequence stopped.
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
    STATUS_TIMESTAMPS = {
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
    owner = models.ForeignKey(  # indexed by reviews_request_owner_recent (owner, -created_at)
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="review_requests",
        db_index=False,
    )
    contact = models.ForeignKey(  # indexed by reviews_request_contact_recent (contact, ...)
        Contact, on_delete=models.CASCADE, related_name="review_requests", db_index=False
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
                fields=["contact"],
                condition=Q(status__in=_ACTIVE_REQUEST_STATUSES),
                name="reviews_request_one_active_per_contact",
            ),
            models.CheckConstraint(
                condition=Q(status__in=_ACTIVE_REQUEST_STATUSES) | Q(ended_at__isnull=False),
                name="reviews_request_ended_has_ended_at",
            ),
        ]
        indexes = [
            models.Index(fields=["owner", "-created_at"], name="reviews_request_owner_recent"),
            models.Index(fields=["contact", "-created_at"], name="reviews_request_contact_recent"),
        ]

    def __str__(self) -> str:
        return f"Review request {self.id} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE_STATUSES

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
    TRANSITIONS: dict[str, frozenset[str]] = {
        Status.PLANNED: frozenset({Status.PENDING, Status.CANCELLED}),
        Status.PENDING: frozenset({Status.QUEUED, Status.FAILED, Status.CANCELLED}),
        # back to pending: a lease expired before a send task claimed it
        Status.QUEUED: frozenset({Status.SENDING, Status.PENDING, Status.CANCELLED}),
        # pending: rejected-transient (retry with backoff); unknown: may have been sent;
        # cancelled: the send task found the contact opted out (or the request ended) after
        # claiming the row and before calling the provider, so nothing went out
        Status.SENDING: frozenset(
            {Status.SENT, Status.PENDING, Status.FAILED, Status.UNKNOWN, Status.CANCELLED}
        ),
        Status.SENT: frozenset({Status.DELIVERED, Status.FAILED}),
        Status.DELIVERED: frozenset(),
        # reconciled by a status callback, or resent by staff (pending)
        Status.UNKNOWN: frozenset({Status.SENT, Status.DELIVERED, Status.FAILED, Status.PENDING}),
        # resent by staff
        Status.FAILED: frozenset({Status.PENDING}),
        Status.CANCELLED: frozenset(),
    }
    STATUS_TIMESTAMPS = {
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
            # The dispatcher's scan: due pending rows only, so the index stays small.
            models.Index(
                fields=["due_at"], condition=Q(status="pending"), name="reviews_message_due"
            ),
            # Lease recovery of rows stuck in queued/sending.
            models.Index(
                fields=["status", "updated_at"],
                condition=Q(status__in=["queued", "sending"]),
                name="reviews_message_in_flight",
            ),
            # Provider status callbacks look messages up by the provider's id.
            models.Index(
                fields=["provider", "provider_message_id"],
                condition=~Q(provider_message_id=""),
                name="reviews_message_provider_id",
            ),
        ]

    def __str__(self) -> str:
        return f"Message {self.step} of {self.review_request_id} by {self.channel} ({self.status})"

    @classmethod
    def sources(cls, to: str) -> frozenset[str]:
        """Statuses a message may move to ``to`` from, for conditional UPDATE claims:
        ``filter(pk=pk, status__in=Message.sources(SENDING)).update(...)``."""
        return _sources(cls.TRANSITIONS, to)

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
    review_request: ReviewRequest, steps: Iterable[PlannedStep], *, due_at: datetime
) -> list[Message]:
    """The unsaved message rows of a new request: step 0 pending at ``due_at``, the rest planned."""
    return [
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


# --- Message templates ----------------------------------------------------------------------------

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
    """A business's own wording for one step on one channel; the shipped defaults
    (``templates/messages/``) apply where there is none.

    Written by owners, so never rendered by a template engine: ``reviews.merge_fields``
    substitutes the known ``{fields}`` and nothing else. ``clean()`` refuses unknown fields,
    requires ``{review_link}``, and for SMS requires the business to be named and appends
    "Reply STOP to opt out" when the text offers no way to stop.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(  # indexed by reviews_template_owner_channel_step
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="message_templates",
        db_index=False,
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
                fields=["owner", "channel", "step"], name="reviews_template_owner_channel_step"
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

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "feedback"

    def __str__(self) -> str:
        return f"Feedback on {self.review_request_id}: {self.text[:40]}"


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
    owner = models.ForeignKey(  # indexed by reviews_optout_address (owner, address)
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
        indexes = [models.Index(fields=["owner", "address"], name="reviews_optout_address")]

    def __str__(self) -> str:
        return f"{self.get_action_display()} of {self.channel} by {self.address} ({self.source})"
