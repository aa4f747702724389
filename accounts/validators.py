"""Validators for owner settings: an IANA time zone and an ISO region known to phonenumbers."""

from __future__ import annotations

import zoneinfo

import phonenumbers
from django.core.exceptions import ValidationError


def validate_time_zone(value: str) -> None:
    if value not in zoneinfo.available_timezones():
        raise ValidationError(
            "%(value)s is not an IANA time zone (for example Europe/London or America/New_York).",
            code="invalid_time_zone",
            params={"value": value},
        )


def validate_region(value: str) -> None:
    if value not in phonenumbers.SUPPORTED_REGIONS:
        raise ValidationError(
            "%(value)s is not a two-letter region code with phone numbering data "
            "(for example US or GB).",
            code="invalid_region",
            params={"value": value},
        )
