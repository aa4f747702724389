"""Sending windows (quiet hours): the one rule for when a message may go out.

A window is the part of the day, on the recipient's wall clock, when messages may be sent, e.g.
08:00-21:00 (the US federal telephone-solicitation hours, 47 CFR 64.1200(c)(1)). ``start >
end`` is a window that spans midnight (22:00-06:00). The rule works on instants: the window of
each local day is turned into a UTC interval, so DST changes are exact:

* a start that falls in a spring-forward gap (02:30 on the night clocks jump 02:00 -> 03:00)
  opens the window when the clock first shows a later time (03:00);
* a start that occurs twice (01:30 on the night clocks fall back) opens it the first time.

A phone number can map to several time zones (a US area code straddling two zones, a
nationwide mobile range, a toll-free number: every North American zone). Which clock then
decides is ``send_zones``: when the business's own time zone is one of them (or keeps the same
clock as one of them all year, as Melbourne does Sydney's), the business's, since a customer of
a local business is most likely local too: an Australian mobile of a Sydney business gets
Sydney's 08:00, not the 12:30 that the number's zones out to Cocos Islands (UTC+6:30) would
share. Otherwise the window must hold in **every** zone (the strictest reading): a US toll-free
number with 08:00-21:00 gets 22:00-23:30 UTC, 08:00 in Guam and 19:30 in St. John's. When the
zones share no allowed time at all (a short window and zones far apart), callers fall back to
the business's own zone: see ``BusinessSettings.send_time``.
"""

from __future__ import annotations

import enum
import zoneinfo
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache

import phonenumbers
from django.db import models
from phonenumbers import timezone as phone_timezone

# How far ahead to look for a shared allowed time. Any non-empty intersection of daily windows
# recurs within a day or two; a week covers DST-shifted edge days.
_HORIZON_DAYS = 7


@dataclass(frozen=True)
class SendingWindow:
    start: time
    end: time

    def __str__(self) -> str:
        return f"{self.start:%H:%M}-{self.end:%H:%M}"

    def contains(self, local: time) -> bool:
        """Whether a wall-clock time is inside the window (``start`` inclusive, ``end`` not)."""
        if self.start == self.end:
            return True
        if self.start < self.end:
            return self.start <= local < self.end
        return local >= self.start or local < self.end


def next_allowed_time(
    at: datetime, window: SendingWindow, zones: Sequence[zoneinfo.ZoneInfo]
) -> datetime | None:
    """The earliest instant ``>= at`` inside ``window`` in every zone of ``zones`` (UTC).

    ``at`` itself when it is already allowed everywhere. ``None`` when the zones share no
    allowed time within a week. ``start == end`` means no quiet hours.
    """
    if at.tzinfo is None:
        raise ValueError("at must be timezone-aware")
    at = at.astimezone(UTC)
    if window.start == window.end or not zones:
        return at
    allowed: list[tuple[datetime, datetime]] | None = None
    for zone in zones:
        intervals = _allowed_intervals(at, window, zone)
        allowed = intervals if allowed is None else _intersect(allowed, intervals)
    for start, end in allowed or ():
        if end > at:
            return max(start, at)
    return None


def _allowed_intervals(
    at: datetime, window: SendingWindow, zone: zoneinfo.ZoneInfo
) -> list[tuple[datetime, datetime]]:
    """The window's UTC intervals for the local days around ``at`` (yesterday's may still run)."""
    today = at.astimezone(zone).date()
    intervals = []
    for offset in range(-1, _HORIZON_DAYS + 1):
        day = today + timedelta(days=offset)
        end_day = day if window.start < window.end else day + timedelta(days=1)
        start = first_instant_at_wall_time(day, window.start, zone)
        end = first_instant_at_wall_time(end_day, window.end, zone)
        if end > start:
            intervals.append((start, end))
    return intervals


def _intersect(
    a: list[tuple[datetime, datetime]], b: list[tuple[datetime, datetime]]
) -> list[tuple[datetime, datetime]]:
    """Intersection of two sorted lists of disjoint half-open intervals."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def first_instant_at_wall_time(day: date, wall: time, zone: zoneinfo.ZoneInfo) -> datetime:
    """The first instant (UTC) at which the clock in ``zone`` shows ``wall`` or later on ``day``.

    Normally the instant the clock shows ``wall`` (the first of two when the clocks fall back);
    in a spring-forward gap that skips ``wall``, the moment the clocks jump.
    """
    naive = datetime.combine(day, wall)
    # fold=0 reads a skipped time with the offset before the jump, landing after the gap.
    after = naive.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if _wall(after, zone) == naive:
        return after
    # In a gap: fold=1 reads it with the offset after the jump, landing before the gap. The
    # jump lies between; find the first second whose wall time is not earlier than `naive`.
    before = naive.replace(tzinfo=zone, fold=1).astimezone(UTC)
    while after - before > timedelta(seconds=1):
        middle = before + timedelta(seconds=(after - before).total_seconds() // 2)
        if _wall(middle, zone) >= naive:
            after = middle
        else:
            before = middle
    return after


def _wall(instant: datetime, zone: zoneinfo.ZoneInfo) -> datetime:
    return instant.astimezone(zone).replace(tzinfo=None)


def recipient_time_zones(phone: str) -> tuple[zoneinfo.ZoneInfo, ...]:
    """The time zones ``phonenumbers`` maps an E.164 number to; ``()`` when unknown or empty."""
    if not phone:
        return ()
    return _zones_for_number(phone)


@lru_cache(maxsize=4096)
def _zones_for_number(phone: str) -> tuple[zoneinfo.ZoneInfo, ...]:
    try:
        number = phonenumbers.parse(phone, None)
    except phonenumbers.NumberParseException:
        return ()
    zones = []
    for name in phone_timezone.time_zones_for_number(number):
        try:
            zones.append(zoneinfo.ZoneInfo(name))
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            continue  # "Etc/Unknown", or a zone this system's tz database lacks
    return tuple(zones)


class WindowAppliesTo(models.TextChoices):
    """Which messages a business's sending window holds back."""

    SMS = "sms", "SMS only"
    ALL = "all", "SMS and e-mail"
    NONE = "none", "No quiet hours"


class ZoneBasis(enum.StrEnum):
    """Whose clock a send time follows, and so what a person is told about a moved time."""

    NUMBER = "number"  # the number's one time zone
    BUSINESS_AMONG_NUMBER = "business_among_number"  # several zones, the business's among them
    EVERY_ZONE = "every_zone"  # several zones, the business's not among them: all must allow
    BUSINESS = "business"  # the number gives no zone, or its zones share no allowed time


def send_zones(
    phone: str, business_zone: zoneinfo.ZoneInfo
) -> tuple[tuple[zoneinfo.ZoneInfo, ...], ZoneBasis]:
    """The zones whose window a message to ``phone`` must fit, and why (``ZoneBasis``)."""
    zones = recipient_time_zones(phone)
    if not zones:
        return (business_zone,), ZoneBasis.BUSINESS
    if len(zones) == 1:
        return zones, ZoneBasis.NUMBER
    if any(_same_clock(zone, business_zone) for zone in zones):
        return (business_zone,), ZoneBasis.BUSINESS_AMONG_NUMBER
    return zones, ZoneBasis.EVERY_ZONE


def _same_clock(a: zoneinfo.ZoneInfo, b: zoneinfo.ZoneInfo) -> bool:
    """The same zone, or one whose clock agrees with it in January and in July."""
    if a.key == b.key:
        return True
    year = datetime.now(UTC).year
    probes = (datetime(year, 1, 15, 12, tzinfo=UTC), datetime(year, 7, 15, 12, tzinfo=UTC))
    return all(p.astimezone(a).utcoffset() == p.astimezone(b).utcoffset() for p in probes)
