"""Template filters of the owner portal."""

from __future__ import annotations

from datetime import datetime, timedelta

import phonenumbers
from django import template
from django.template import Context
from django.utils import timezone
from django.utils.timesince import timesince

from accounts.access import reaches
from reviews.models import BusinessSettings, ReviewRequest, UnknownLocation

register = template.Library()


@register.simple_tag(takes_context=True)
def review_site_missing(context: Context) -> bool:
    """Whether requests the page shows may wait for a review site: with a location chosen
    (``switcher``), whether it lists none; otherwise whether one of the locations the user
    reaches lists none (one location: whether the business lists none)
    (``{% review_site_missing as no_site %}``; cached with its settings, no query)."""
    request = context["request"]
    policy = BusinessSettings.for_owner(request.access.owner)
    switcher = context.get("switcher")
    if switcher is not None and switcher.chosen is not None:
        return not policy.at(switcher.chosen.id).has_review_site
    if not policy.locations:
        return not policy.has_review_site
    return any(
        not location.has_review_site
        for location in policy.locations
        if reaches(request.access, location.id)
    )


@register.simple_tag(takes_context=True)
def waits_for_review_site(context: Context, review_request: ReviewRequest) -> bool:
    """Whether ``review_request`` waits for a review site: its location lists none
    (``{% waits_for_review_site item as waiting %}``; cached with the settings, no query)."""
    policy = BusinessSettings.for_owner(context["request"].access.owner)
    try:
        return not policy.at(review_request.location_id).has_review_site
    except UnknownLocation:
        return False


@register.simple_tag(takes_context=True)
def location_of(context: Context, review_request: ReviewRequest) -> str:
    """The name of ``review_request``'s location; a request with none is at the account's
    default location (``{% location_of item %}``; cached with the settings, no query)."""
    policy = BusinessSettings.for_owner(context["request"].access.owner)
    try:
        location = policy.at(review_request.location_id).location
    except UnknownLocation:
        return ""
    return location.name if location is not None else ""


@register.filter
def after_first(offset: timedelta | int) -> str:
    """A follow-up's offset in words: "3 days", "36 hours" (an int is hours)."""
    hours = offset if isinstance(offset, int) else int(offset.total_seconds() // 3600)
    if hours % 24 == 0:
        days = hours // 24
        return f"{days} day{'' if days == 1 else 's'}"
    return f"{hours} hour{'' if hours == 1 else 's'}"


@register.filter
def phone(value: str) -> str:
    """An E.164 number as people read it: "+1 415-555-2671", "+44 20 7946 0958"."""
    if not value:
        return ""
    try:
        parsed = phonenumbers.parse(value, None)
    except phonenumbers.NumberParseException:
        return value
    return phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.INTERNATIONAL)


@register.filter
def ago(moment: datetime | None) -> str:
    """ "just now", "5 minutes ago", "3 days, 2 hours ago"."""
    if moment is None:
        return ""
    if timezone.now() - moment < timedelta(minutes=1):
        return "just now"
    return f"{timesince(moment)} ago"
