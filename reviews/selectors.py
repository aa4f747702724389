"""Reads of the reviews app (HackSoft style: selectors read, services write)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Q

from accounts.models import User

from .models import Contact, ReviewRequest


def contacts_matching(
    *, owner: User, email_normalized: str, phone: str, for_update: bool = False
) -> list[Contact]:
    """The owner's contacts with this e-mail key or this E.164 phone (at most two rows).

    ``for_update`` locks them, in primary-key order so that two transactions locking the same
    pair cannot deadlock.
    """
    match = Q()
    if email_normalized:
        match |= Q(email_normalized=email_normalized)
    if phone:
        match |= Q(phone=phone)
    if not match:
        return []
    queryset = Contact.objects.filter(match, owner=owner).order_by("pk")
    if for_update:
        queryset = queryset.select_for_update()
    return list(queryset)


def review_request_blocking(
    *, contact: Contact, now: datetime, cooldown: timedelta
) -> ReviewRequest | None:
    """The request that stops a new one for ``contact``: its active one, else the latest that
    reached them and ended less than ``cooldown`` ago. ``None`` when a new one may be created."""
    candidates = ReviewRequest.objects.filter(contact=contact).filter(
        Q(status__in=ReviewRequest.ACTIVE_STATUSES)
        | Q(sent_at__isnull=False, ended_at__gt=now - cooldown)
    )
    found = list(candidates.order_by("-created_at")[:5])
    for request in found:
        if request.is_active:
            return request
    return next((r for r in found if r.blocks_new_request(now=now, cooldown=cooldown)), None)


def review_request_latest(*, contact: Contact) -> ReviewRequest | None:
    return ReviewRequest.objects.filter(contact=contact).order_by("-created_at").first()
