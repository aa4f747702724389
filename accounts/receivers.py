"""Model signals of the accounts app (connected in apps.ready)."""

from __future__ import annotations

from django.db.models.signals import post_save
from django.dispatch import receiver

from . import services
from .models import User


@receiver(post_save, sender=User, dispatch_uid="accounts_owner_first_location")
def _owner_created(sender, instance: User, created: bool, raw: bool = False, **kwargs) -> None:
    """A business has a location from its first moment: an owner created anywhere
    (``business_create``, the admin's add page) gets its first, in the same transaction, named
    after the business and in its time zone, as the migration gave the businesses before
    locations. Staff (no business) and members get none."""
    if created and not raw and instance.account_id is None and not instance.is_staff:
        services.location_default(account=instance)
