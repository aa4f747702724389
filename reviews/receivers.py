"""anymail's tracking and inbound signals → the reviews services, model signals → cache
invalidation, and the accounts app's ``default_location_changing`` → pinning the rows of the
old default location (connected in apps.ready).

Receivers only translate the normalised event; the rules live in the services. An exception
here makes anymail answer 400 and the ESP retry, so only unexpected errors propagate.
"""

from __future__ import annotations

import logging
import re

from anymail.signals import inbound, tracking
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from accounts.models import Location
from accounts.signals import default_location_changing

from . import services
from .models import BusinessSettings, Contact, LocationSettings, ReviewSite

logger = logging.getLogger(__name__)

_UNSUBSCRIBE_TOKEN = re.compile(r"unsubscribe\s+([A-Za-z0-9_-]{16,64})", re.IGNORECASE)


def _soft_bounce(esp_event) -> bool:
    """Some ESPs report soft bounces as anymail ``bounced`` (Postmark's ``SoftBounce``); the
    ESP keeps retrying those, so they are not a failure and never suppress the address."""
    if not isinstance(esp_event, dict):
        return False
    kind = " ".join(
        str(esp_event.get(key, "")) for key in ("Type", "type", "bounce_type", "BounceType")
    ).lower()
    return "soft" in kind or "transient" in kind


@receiver(tracking, dispatch_uid="reviews.email_tracking")
def email_tracking_event(sender, event, esp_name, **kwargs) -> None:
    metadata = event.metadata or {}
    event_type = str(event.event_type or "")
    if event_type == "bounced" and _soft_bounce(event.esp_event):
        event_type = "deferred"
    result = services.email_event_record(
        event_type=event_type,
        esp_message_id=str(event.message_id or ""),
        our_message_id=str(metadata.get("message_id", "")),
        event_id=str(event.event_id or ""),
        reject_reason=str(event.reject_reason or ""),
        description=str(event.description or event.mta_response or "")[:1000],
    )
    logger.info(
        "e-mail tracking event",
        extra={"esp": esp_name, "event_type": event.event_type, "result": result},
    )


@receiver(inbound, dispatch_uid="reviews.email_inbound_unsubscribe")
def email_inbound_unsubscribe(sender, event, esp_name, **kwargs) -> None:
    """A ``mailto:`` unsubscribe (``List-Unsubscribe``) arriving through the ESP's inbound
    webhook: its subject is ``unsubscribe <request token>``. Other mail is ignored."""
    message = event.message
    subject = (message.subject or "") if message is not None else ""
    match = _UNSUBSCRIBE_TOKEN.search(subject)
    if not match:
        return
    contact = services.contact_email_unsubscribe(
        token=match.group(1),
        source=Contact.OptOutSource.EMAIL_UNSUBSCRIBE,
        raw_text=f"mailto unsubscribe: {subject}"[:500],
        external_id=str(event.event_id or ""),
    )
    logger.info("mailto unsubscribe", extra={"esp": esp_name, "matched": contact is not None})


@receiver(post_save, sender=BusinessSettings, dispatch_uid="business_settings_saved")
@receiver(post_delete, sender=BusinessSettings, dispatch_uid="business_settings_deleted")
def _business_settings_changed(sender, instance: BusinessSettings, **kwargs) -> None:
    """Every save (the settings page, the admin) reaches ``for_owner``'s readers at once."""
    BusinessSettings.invalidate_cached(instance.owner_id)


@receiver(post_save, sender=ReviewSite, dispatch_uid="review_site_saved")
@receiver(post_delete, sender=ReviewSite, dispatch_uid="review_site_deleted")
def _review_site_changed(sender, instance: ReviewSite, **kwargs) -> None:
    """``BusinessSettings.for_owner`` caches whether the business lists a review site."""
    BusinessSettings.invalidate_cached(instance.owner_id)


@receiver(post_save, sender=Location, dispatch_uid="location_saved")
@receiver(post_delete, sender=Location, dispatch_uid="location_deleted")
def _location_changed(sender, instance: Location, **kwargs) -> None:
    """``BusinessSettings.for_owner`` caches the account's locations (names, time zones, order)."""
    BusinessSettings.invalidate_cached(instance.account_id)


@receiver(post_save, sender=LocationSettings, dispatch_uid="location_settings_saved")
@receiver(post_delete, sender=LocationSettings, dispatch_uid="location_settings_deleted")
def _location_settings_changed(sender, instance: LocationSettings, **kwargs) -> None:
    """... and what each location sets differently."""
    BusinessSettings.invalidate_cached(instance.owner_id)


@receiver(default_location_changing, dispatch_uid="reviews_pin_rows_of_the_default_location")
def _default_location_changing(sender, account, location: Location, **kwargs) -> None:
    """Requests and sites with no location are the default's: pin them to it before another
    location becomes the default, so they stay where they are."""
    services.location_rows_pin(owner=account, location_id=location.pk)
