"""The activity app's receivers: the accounts app's ``default_location_changing`` → pinning the
rollup's rows of the default location, as reviews pins the requests they count."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from accounts.models import Location, User
from accounts.signals import default_location_changing

from . import services


@receiver(default_location_changing, dispatch_uid="activity_pin_rollup_of_the_default_location")
def _default_location_changing(
    sender: Any, account: User, location: Location, **kwargs: Any
) -> None:
    """Rollup rows with no location count the default's requests: pin them to it before
    another location becomes the default, so they keep counting where their requests are."""
    services.activity_rollup_pin_default(account_id=account.pk, location_id=location.pk)
