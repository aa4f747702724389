"""What a business configures: its review sites, its review-request policy and its message
wording."""

from __future__ import annotations

import re
import uuid
import zoneinfo
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator
from django.db import models
from django.db.models import Exists, OuterRef, Q

from contact_input.normalize import MAX_DELAY_HOURS
from core import versioned_cache

from .. import merge_fields, sms_segments
from ..sending_windows import (
    SendingWindow,
    ZoneBasis,
    next_allowed_time,
    recipient_time_zones,
    send_zones,
)
from .contacts import Channel

if TYPE_CHECKING:
    from .contacts import Contact


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
    def listed_by(owner_id: uuid.UUID) -> bool:
        """Whether the business lists at least one review site: no review request or follow-up
        goes out before it does (``Message.hold_reason``)."""
        return ReviewSite.objects.filter(owner_id=owner_id).exists()

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
    basis: ZoneBasis | None = None  # whose clock decided (None: no window applies)
    number_zones: tuple[str, ...] = ()  # the phone number's candidate zones

    @property
    def shifted(self) -> bool:
        return self.at != self.requested

    def hours_text(self, channel_label: str) -> str:
        """The sending hours and whose clock they follow, in words: why a time moved."""
        if self.window is None:
            return ""
        hours = (
            f"{channel_label} messages go out only between {self.window.start:%H:%M} and "
            f"{self.window.end:%H:%M}"
        )
        zones = _zone_list(self.zones)
        if self.basis == ZoneBasis.NUMBER:
            return f"{hours} in the recipient's time zone ({zones})."
        if self.basis == ZoneBasis.BUSINESS_AMONG_NUMBER:
            return (
                f"{hours} in the business's time zone ({zones}), one of the "
                f"{len(self.number_zones)} time zones the phone number may be in."
            )
        if self.basis == ZoneBasis.EVERY_ZONE:
            return (
                f"{hours} in every time zone the phone number may be in ({zones}); the "
                "business's time zone is not one of them, so only the hours they all share "
                "are used."
            )
        if self.number_zones:
            return (
                f"{hours} in the business's time zone ({zones}): the time zones the phone "
                f"number may be in ({_zone_list(self.number_zones)}) share no such hours."
            )
        return f"{hours} in the business's time zone ({zones}): the number tells no time zone."


def _zone_list(zones: tuple[str, ...]) -> str:
    shown = ", ".join(zones[:3])
    return shown + (f" and {len(zones) - 3} more" if len(zones) > 3 else "")


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
    notify_feedback = models.BooleanField(
        default=True,
        help_text="E-mail the owner when a contact leaves private feedback.",
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
    # Not a column: set on what ``for_owner`` returns (and only there).
    has_review_site: bool

    @classmethod
    def cache_key(cls, owner_id) -> str:
        # v2: the entry also holds has_review_site, which code reading v1 entries would not
        # know; a new key keeps processes of two releases apart during a deploy.
        return f"reviews:business-settings:v2:{owner_id}"

    @classmethod
    def for_owner(cls, owner) -> BusinessSettings:
        """The owner's settings (read-only: save changes through ``business_settings_update``),
        created with the defaults on first use.

        Served from the cache when it has them: every save or delete invalidates the entry
        (``reviews.receivers``) safely against concurrent readers (``core.versioned_cache``).
        """
        read = versioned_cache.read(cls.cache_key(owner.pk))
        values = dict(read.value or {})
        has_review_site = values.pop("has_review_site", None)
        if read.value is not None and has_review_site is not None:
            obj = versioned_cache.model_from_values(cls, values)
        else:
            sites = ReviewSite.objects.filter(owner_id=OuterRef("owner_id"))
            obj, created = cls.objects.annotate(has_review_site=Exists(sites)).get_or_create(
                owner=owner
            )
            has_review_site = ReviewSite.listed_by(owner.pk) if created else obj.has_review_site
            versioned_cache.write(
                read,
                {**versioned_cache.model_values(obj), "has_review_site": has_review_site},
                timeout=cls.CACHE_SECONDS,
            )
        obj.owner = owner  # spare a query for the time zone
        # Whether the business lists a review site (``Message.hold_reason``), cached with the
        # settings: a review site's save or delete invalidates them too.
        obj.has_review_site = has_review_site
        return obj

    @classmethod
    def lock_for(cls, owner) -> BusinessSettings:
        """The owner's settings row, locked (``SELECT ... FOR UPDATE``) until the transaction
        ends: what serialises adding a contact while the business lists no review site with
        adding its first site (``messages_release_waiting``), so no held request is missed."""
        obj, _ = cls.objects.select_for_update().get_or_create(owner=owner)
        return obj

    @classmethod
    def invalidate_cached(cls, owner_id) -> None:
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

        The recipient's clock decides (``sending_windows.send_zones``): the phone number's
        time zone; when it has several, the business's if it is one of them, else all of them
        (the strictest reading); the business's time zone when there is no phone, the number
        is unknown to the time-zone data, or its zones share no allowed hour.
        ``SendTime.hours_text`` says which, in words.
        """
        if not self.window_applies(channel):
            return SendTime(at=requested, requested=requested)
        window = self.window
        business_zone = zoneinfo.ZoneInfo(self.owner.time_zone)
        zones, basis = send_zones(phone, business_zone)
        at = next_allowed_time(requested, window, zones)
        if at is None:
            zones, basis = (business_zone,), ZoneBasis.BUSINESS
            at = next_allowed_time(requested, window, zones)
        assert at is not None  # one zone always has an allowed time within a day
        return SendTime(
            at=at,
            requested=requested,
            window=window,
            zones=tuple(z.key for z in zones),
            basis=basis,
            number_zones=tuple(z.key for z in recipient_time_zones(phone)),
        )


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
