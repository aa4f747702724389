"""Where a business's rows are: the location a row belongs to (NULL: the account's default
location), a location as the sending rules read it (``LocationPolicy``) and what one location
sets differently from its account (``LocationSettings``)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import time
from typing import Any, Protocol

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce

from accounts.access import locations_q
from accounts.models import Location

from ..sending_windows import WindowAppliesTo

# What a NULL location is compared as in unique constraints: no location's id.
NO_LOCATION = uuid.UUID(int=0)


def location_key(field: str = "location") -> Coalesce:
    """``COALESCE(<field>, NO_LOCATION)``: a location in a unique constraint, NULL included
    (NULLs would never be equal to each other)."""
    return Coalesce(F(field), Value(NO_LOCATION), output_field=models.UUIDField())


class PlacedRow(Protocol):
    """A row of an account at one of its locations: a review site, a location's settings, a
    message template."""

    owner_id: Any
    location_id: Any
    location: Any


def check_location(row: PlacedRow) -> None:
    """A row's location is one of its owner's."""
    location = row.location if row.location_id is not None else None
    if location is not None and row.owner_id is not None and location.account_id != row.owner_id:
        raise ValidationError({"location": "A location of another business."})


@dataclass(frozen=True)
class LocationPolicy:
    """One location of an account as the sending rules read it, cached with the account's
    settings (``BusinessSettings.for_owner``): the location's name, time zone and place, whether
    it lists a review site, and its own sender name, postal address and sending window (blank
    or ``None``: the account's)."""

    id: uuid.UUID
    name: str
    time_zone: str
    position: int
    is_default: bool
    has_review_site: bool
    sender_name: str = ""
    postal_address: str = ""
    send_window_start: time | None = None
    send_window_end: time | None = None
    send_window_applies_to: str = ""

    def rows_q(self, field: str = "location") -> Q:
        """The rows of this location: ``field`` is it, or NULL when it is the default."""
        default = self.id if self.is_default else None
        return locations_q([self.id], default_location_id=default, field=field)


class UnknownLocation(LookupError):
    """A location id that is not one of the account's."""


class LocationSettings(models.Model):
    """What one location sends differently from the rest of its account: its own sender name,
    postal address and sending window. Blank (``None`` for the window's times): the account's
    (``BusinessSettings``), which ``BusinessSettings.at`` applies. At most one row per location;
    none means the account's for everything."""

    location = models.OneToOneField(
        Location, on_delete=models.CASCADE, primary_key=True, related_name="review_settings"
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="location_settings"
    )
    sender_name = models.CharField(
        max_length=100, blank=True, help_text="The From name of its e-mails; blank: the account's."
    )
    postal_address = models.TextField(
        max_length=300,
        blank=True,
        help_text="Printed in its e-mails' footer; blank: the account's.",
    )
    send_window_start = models.TimeField(
        null=True, blank=True, help_text="Its own sending hours from ...; empty: the account's."
    )
    send_window_end = models.TimeField(null=True, blank=True, help_text="... until.")
    send_window_applies_to = models.CharField(
        max_length=10,
        choices=WindowAppliesTo.choices,
        blank=True,
        help_text="Blank: as the account's.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "location review settings"
        verbose_name_plural = "location review settings"
        constraints = [
            models.CheckConstraint(
                condition=Q(send_window_start__isnull=True, send_window_end__isnull=True)
                | Q(send_window_start__isnull=False, send_window_end__isnull=False),
                name="reviews_location_settings_window_whole",
            ),
        ]

    def __str__(self) -> str:
        return f"Review settings of location {self.location_id}"

    def clean(self) -> None:
        super().clean()
        check_location(self)
        if (self.send_window_start is None) != (self.send_window_end is None):
            raise ValidationError(
                {"send_window_end": "Give both ends of the sending hours, or neither."}
            )
        if self.send_window_start is not None and self.send_window_start == self.send_window_end:
            raise ValidationError({"send_window_end": "Must differ from the start."})
