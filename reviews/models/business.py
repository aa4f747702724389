"""What a business configures: its review-request policy (the account's, with what each location
sets differently applied). Its review sites are ``sites.py``'s."""

from __future__ import annotations

import copy
import uuid
import zoneinfo
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator
from django.db import models
from django.db.models import Exists, OuterRef, Q

from accounts.models import Location
from contact_input.normalize import MAX_DELAY_HOURS
from core import versioned_cache

from ..sending_windows import (
    SendingWindow,
    WindowAppliesTo,
    ZoneBasis,
    next_allowed_time,
    recipient_time_zones,
    send_zones,
)
from .contacts import Channel
from .locations import LocationPolicy, LocationSettings, UnknownLocation
from .sites import ReviewSite

if TYPE_CHECKING:
    from .contacts import Contact


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
    A location may set its own sender name, postal address and sending window
    (``LocationSettings``); ``at(location_id)`` is the policy with them applied.
    """

    class InitialChannel(models.TextChoices):
        SMS = "sms", "SMS when a mobile number is known, else e-mail"
        EMAIL = "email", "E-mail when an address is known, else SMS"

    WindowAppliesTo = WindowAppliesTo

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
    # Not columns: set on what ``for_owner`` returns (and only there). Whether the business
    # (for ``at()``: the location) lists a review site; the account's locations, the first
    # the default; the location this policy is applied for (``None``: the account's own).
    has_review_site: bool
    locations: tuple[LocationPolicy, ...] = ()
    location: LocationPolicy | None = None
    account_policy: BusinessSettings | None = None

    @classmethod
    def cache_key(cls, owner_id) -> str:
        # v3: the entry also holds the locations (v2: has_review_site), which code reading
        # older entries would not know; a new key keeps processes of two releases apart
        # during a deploy.
        return f"reviews:business-settings:v3:{owner_id}"

    @classmethod
    def for_owner(cls, owner) -> BusinessSettings:
        """The account's settings (read-only: save changes through
        ``business_settings_update``) with its locations, created with the defaults on first
        use; ``at(location_id)`` applies a location's own.

        Served from the cache when it has them: every save or delete of the settings, a
        location, its settings or a review site invalidates the entry (``reviews.receivers``)
        safely against concurrent readers (``core.versioned_cache``).
        """
        read = versioned_cache.read(cls.cache_key(owner.pk))
        values = dict(read.value or {})
        has_review_site = values.pop("has_review_site", None)
        locations = values.pop("locations", None)
        if read.value is not None and has_review_site is not None and locations is not None:
            obj = versioned_cache.model_from_values(cls, values)
        else:
            obj, has_review_site, locations, created = cls._load(owner)
            if created:  # our save invalidated the entry: load again, after it
                read = versioned_cache.read(read.key)
                obj, has_review_site, locations, _ = cls._load(owner)
            versioned_cache.write(
                read,
                {
                    **versioned_cache.model_values(obj),
                    "has_review_site": has_review_site,
                    "locations": locations,
                },
                timeout=cls.CACHE_SECONDS,
            )
        return cls._with(obj, owner, has_review_site, locations)

    @classmethod
    def fresh(cls, owner) -> BusinessSettings:
        """``for_owner`` read from the database and not cached: for a transaction that has
        written (a review site, a location) and may still roll back, whose reads must not
        outlive it in the cache."""
        obj, has_review_site, locations, _ = cls._load(owner)
        return cls._with(obj, owner, has_review_site, locations)

    @classmethod
    def _with(
        cls, obj: BusinessSettings, owner, has_review_site: bool, locations: list[dict]
    ) -> BusinessSettings:
        """The loaded row with what comes with it, not columns."""
        obj.owner = owner  # spare a query for the time zone
        # Whether the business lists a review site, and its locations (each with whether it
        # lists one: ``Message.hold_reason``), cached with the settings: a review site's or a
        # location's save or delete invalidates them too.
        obj.has_review_site = has_review_site
        obj.locations = tuple(LocationPolicy(**row) for row in locations)
        return obj

    @classmethod
    def _load(cls, owner) -> tuple[BusinessSettings, bool, list[dict], bool]:
        """``for_owner``'s read of the database: the settings row with whether the business
        lists a review site, then its locations with their own settings; two queries. On first
        use the row is created: then the last value is True (a location never is: an account
        without one, made before locations by hand, has requests with no location, which its
        first location will own). A member has no settings of their own: ``ValueError``."""
        if owner.is_member:
            raise ValueError(f"{owner.email} is a member: read the account's settings")
        sites = ReviewSite.objects.filter(owner_id=OuterRef("owner_id"))
        obj, created = cls.objects.annotate(
            has_review_site=Exists(sites), has_unplaced_site=Exists(sites.filter(location=None))
        ).get_or_create(owner=owner)
        if created:
            has_review_site = ReviewSite.listed_by(owner.pk)
            has_unplaced_site = ReviewSite.objects.filter(owner=owner, location=None).exists()
        else:
            has_review_site, has_unplaced_site = obj.has_review_site, obj.has_unplaced_site
        rows = _locations_of(owner)
        locations = [
            _location_values(location, is_default=n == 0, has_unplaced_site=has_unplaced_site)
            for n, location in enumerate(rows)
        ]
        return obj, has_review_site, locations, created

    def at(self, location_id: uuid.UUID | None) -> BusinessSettings:
        """This account's policy at one of its locations (``None``: the default one): the
        location's sender name, postal address and sending window where it sets them, its
        time zone, whether it lists a review site. ``UnknownLocation`` for another account's
        location. The account's own policy when it has no location (an account made by hand
        without one, or a row read without ``for_owner``)."""
        account = self.account_policy or self
        if not account.locations:
            return account
        location = (
            account.locations[0]
            if location_id is None
            else next((loc for loc in account.locations if loc.id == location_id), None)
        )
        if location is None:
            raise UnknownLocation(location_id)
        policy = copy.copy(account)
        policy.account_policy, policy.location = account, location
        policy.has_review_site = location.has_review_site
        policy.sender_name = location.sender_name or account.sender_name
        policy.postal_address = location.postal_address or account.postal_address
        if location.send_window_start is not None and location.send_window_end is not None:
            policy.send_window_start = location.send_window_start
            policy.send_window_end = location.send_window_end
        if location.send_window_applies_to:
            policy.send_window_applies_to = location.send_window_applies_to
        return policy

    @property
    def location_id(self) -> uuid.UUID | None:
        """The location this policy is applied for (``at``); ``None`` for the account's."""
        return self.location.id if self.location is not None else None

    @property
    def time_zone(self) -> str:
        """The location's time zone (``at``), else the business's."""
        return self.location.time_zone if self.location is not None else self.owner.time_zone

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
        is unknown to the time-zone data, or its zones share no allowed hour (the location's
        zone, for a policy ``at`` a location). ``SendTime.hours_text`` says which, in words.
        """
        if not self.window_applies(channel):
            return SendTime(at=requested, requested=requested)
        window = self.window
        business_zone = zoneinfo.ZoneInfo(self.time_zone)
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


def _locations_of(owner) -> list[Location]:
    """The account's locations in order, each with its own settings (or none) and whether it
    lists a review site of its own: one query."""
    own_sites = ReviewSite.objects.filter(location=OuterRef("pk"))
    return list(
        Location.objects.filter(account=owner)
        .select_related("review_settings")
        .annotate(has_review_site=Exists(own_sites))
        .order_by("position", "created_at")
    )


def _location_values(location: Location, *, is_default: bool, has_unplaced_site: bool) -> dict:
    """A location as ``LocationPolicy``'s fields (what the cache holds): the default location
    also lists the sites that have no location."""
    own: LocationSettings | None = getattr(location, "review_settings", None)
    values = {
        "id": location.pk,
        "name": location.name,
        "time_zone": location.time_zone,
        "position": location.position,
        "is_default": is_default,
        # annotated by _locations_of
        "has_review_site": location.has_review_site  # type: ignore[attr-defined]
        or (is_default and has_unplaced_site),
    }
    if own is not None:
        values.update(
            sender_name=own.sender_name,
            postal_address=own.postal_address,
            send_window_start=own.send_window_start,
            send_window_end=own.send_window_end,
            send_window_applies_to=own.send_window_applies_to,
        )
    return values
