"""Businesses and what they configure, for every caller alike (the owner portal, the back
office, ``create_business``, ``create_location``): creating a business with its first
location, its profile and sending policy, what a location sets differently, its review sites and
their order per location (a location's first site releases the messages held for one), and the
wording of each message (the account's, or a location's own).

A ``location_id`` of ``None`` is the account's default location (its first); a location of
another account is ``UnknownLocation``.

Every function validates with the models' own ``full_clean()`` and raises ``ValidationError``
keyed by model field name, so a form can show each error next to its field; nothing is written
then. Callers pass the owner: no function here touches another owner's rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth import password_validation
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max, Q, QuerySet
from django.utils import timezone

from accounts.models import Location, User
from accounts.services import location_default, location_rows

from ..models import (
    BusinessSettings,
    LocationSettings,
    Message,
    MessageTemplate,
    ReviewRequest,
    ReviewSite,
    UnknownLocation,
)
from .dispatch import dispatcher_kick

# --- Businesses -----------------------------------------------------------------------------------


def business_create(
    *,
    email: str,
    password: str,
    business_name: str,
    time_zone: str = "UTC",
    default_region: str = "US",
    review_urls: list[str] | tuple[str, ...] = (),
) -> User:
    """Create a business owner, its first location (named after the business, in its time
    zone, as the migration gave every business that existed before locations) and that
    location's review sites, in one transaction.

    Raises ``ValidationError`` (with field names) for bad input; nothing is created then.
    """
    with transaction.atomic():
        if User.objects.with_email(email).exists():
            raise ValidationError({"email": "A business with this e-mail already exists."})
        try:
            password_validation.validate_password(
                password, user=User(email=email, business_name=business_name)
            )
        except ValidationError as exc:
            raise ValidationError({"password": exc.messages}) from None
        owner = User.objects.create_user(
            email=email,
            password=password,
            business_name=business_name.strip(),
            time_zone=time_zone,
            default_region=default_region.upper(),
        )
        BusinessSettings.objects.create(owner=owner)
        location = location_default(account=owner)  # made with the owner
        for position, url in enumerate(review_urls):
            review_site_add(owner=owner, url=url, position=position, location_id=location.pk)
    return owner


# What an owner may change about themselves and about their sending policy.
PROFILE_FIELDS = ("business_name", "time_zone", "default_region")
POLICY_FIELDS = (
    "initial_channel",
    "default_delay_hours",
    "follow_up_offsets_hours",
    "follow_up_other_channel",
    "cooldown_days",
    "send_window_start",
    "send_window_end",
    "send_window_applies_to",
    "sender_name",
    "postal_address",
    "notify_feedback",
)


def business_settings_update(*, owner: User, changes: Mapping[str, Any]) -> BusinessSettings:
    """Change the owner's profile (``PROFILE_FIELDS``) and sending policy (``POLICY_FIELDS``)
    together, or not at all.

    Both rows are validated with ``full_clean()`` before either is saved; the errors of both are
    raised at once, keyed by field. New settings apply to requests created from now on: a
    request keeps the follow-up plan it was created with. An account with one location is that
    location: a new time zone is the location's too.
    """
    unknown = set(changes) - set(PROFILE_FIELDS) - set(POLICY_FIELDS)
    if unknown:
        raise ValueError(f"not owner settings: {', '.join(sorted(unknown))}")
    with transaction.atomic():
        BusinessSettings.objects.get_or_create(owner=owner)
        policy = BusinessSettings.objects.select_for_update().get(owner=owner)
        profile = User.objects.select_for_update().get(pk=owner.pk)
        for name in PROFILE_FIELDS:
            if name in changes:
                setattr(profile, name, changes[name])
        for name in POLICY_FIELDS:
            if name in changes:
                setattr(policy, name, changes[name])
        errors: dict[str, list[str]] = {}
        for row, exclude in ((profile, ["password"]), (policy, None)):
            try:
                row.full_clean(exclude=exclude)
            except ValidationError as exc:
                for field, messages in exc.message_dict.items():
                    errors.setdefault(field, []).extend(messages)
        if errors:
            raise ValidationError(errors)
        profile.save(update_fields=[name for name in PROFILE_FIELDS if name in changes])
        policy.save()
        locations = list(Location.objects.select_for_update().filter(account=owner)[:2])
        if "time_zone" in changes and len(locations) == 1:
            locations[0].time_zone = profile.time_zone
            locations[0].save(update_fields=["time_zone"])
    for name in PROFILE_FIELDS:  # the caller's instance (request.user) sees the change
        setattr(owner, name, getattr(profile, name))
    policy.owner = owner
    return policy


# What a location may set differently from its account (blank: the account's).
LOCATION_POLICY_FIELDS = (
    "sender_name",
    "postal_address",
    "send_window_start",
    "send_window_end",
    "send_window_applies_to",
)


def location_settings_update(
    *, owner: User, location_id: uuid.UUID, changes: Mapping[str, Any]
) -> LocationSettings:
    """Change what one location sends differently from the account (``LOCATION_POLICY_FIELDS``;
    blank or ``None``: the account's). ``ValidationError`` keyed by field, nothing saved;
    ``Location.DoesNotExist`` if the account has no such location."""
    unknown = set(changes) - set(LOCATION_POLICY_FIELDS)
    if unknown:
        raise ValueError(f"not location settings: {', '.join(sorted(unknown))}")
    with transaction.atomic():
        location = Location.objects.select_for_update().get(account=owner, pk=location_id)
        own = LocationSettings.objects.filter(location=location).first() or LocationSettings(
            location=location, owner=owner
        )
        for name, value in changes.items():
            setattr(own, name, value)
        own.full_clean()
        own.save()
    return own


# --- Review sites ---------------------------------------------------------------------------------


def _location_rows(owner: User, location_id: uuid.UUID | None) -> tuple[uuid.UUID, Q]:
    """``accounts.services.location_rows``, read from the database (not the cached policy:
    these services run in transactions that may write and roll back), with another account's
    location as ``UnknownLocation``."""
    try:
        return location_rows(account=owner, location_id=location_id)
    except Location.DoesNotExist:
        raise UnknownLocation(location_id) from None


def _sites(owner: User, rows: Q) -> QuerySet[ReviewSite]:
    return ReviewSite.objects.filter(rows, owner=owner).order_by("position", "created_at")


def review_site_add(
    *,
    owner: User,
    url: str,
    label: str = "",
    position: int | None = None,
    location_id: uuid.UUID | None = None,
) -> ReviewSite:
    """Add a review site to a location's list (``None``: the default location): its kind
    follows the link, a blank ``label`` names it from the link (Google, Facebook, Trustpilot,
    else the host), and without a ``position`` it goes last. ``ValidationError`` keyed by field
    (a Yelp link, one the location already lists); nothing is saved then.

    The location's first site releases the messages held while it listed none
    (``messages_release_waiting``), in the same transaction."""
    location_id, rows = _location_rows(owner, location_id)
    site = ReviewSite(owner=owner, location_id=location_id, position=position or 0)
    _review_site_point(site, url=url, label=label)
    site.full_clean()
    with transaction.atomic():
        BusinessSettings.lock_for(owner)  # see contacts._has_review_site
        if position is None:
            last = _sites(owner, rows).aggregate(last=Max("position"))["last"]
            site.position = 0 if last is None else last + 1
        site.save()
        messages_release_waiting(owner=owner, location_id=location_id)
    return site


def review_site_update(
    *, owner: User, site_id: uuid.UUID, url: str, label: str = "", position: int | None = None
) -> ReviewSite:
    """Change one of the owner's review sites by the rules of ``review_site_add``: the kind
    follows the new link and a blank ``label`` names it from the link; ``position`` None keeps
    its place. ``ValidationError`` keyed by field, nothing saved; ``ReviewSite.DoesNotExist``
    if the owner has no such site."""
    with transaction.atomic():
        site = ReviewSite.objects.select_for_update().get(owner=owner, pk=site_id)
        _review_site_point(site, url=url, label=label)
        if position is not None:
            site.position = position
        site.full_clean()
        site.save()
    return site


def _review_site_point(site: ReviewSite, *, url: str, label: str) -> None:
    """Point ``site`` at ``url``: the one place its kind and default label are decided."""
    kind = ReviewSite.kind_for_url(url)
    site.url = url
    # None (Yelp): ``ReviewSite.clean`` refuses the link with its own message.
    site.kind = kind or ReviewSite.Kind.CUSTOM
    site.label = label or _default_label(kind, url)


def messages_release_waiting(*, owner: User, location_id: uuid.UUID | None = None) -> int:
    """A location lists a review site now (``None``: the default location): the messages of
    its requests held for one (``Message.WAITING_FOR_REVIEW_SITE``) become pending, due at the
    time they were meant for or now, whichever is later, moved into the location's sending
    window like any other send, and the dispatcher sends them on its normal path. Returns how
    many were released.

    Run in the transaction that adds the site, after ``BusinessSettings.lock_for``
    (``review_site_add``, whichever page adds the site). Requests are locked before their
    messages, the order of every writer that changes both."""
    # Read, not cached: this transaction wrote the site, and may roll back.
    policy = BusinessSettings.fresh(owner).at(location_id)
    location = policy.location
    held = Message.objects.filter(
        review_request__owner=owner,
        status=Message.Status.PLANNED,
        last_error_code=Message.WAITING_FOR_REVIEW_SITE,
    )
    if location is not None:
        held = held.filter(location.rows_q("review_request__location"))
    if not ReviewSite.listed_at(owner.pk, location):
        return 0
    now = timezone.now()
    released = 0
    with transaction.atomic():
        request_ids = list(held.values_list("review_request_id", flat=True))
        requests = {
            request.pk: request
            for request in ReviewRequest.objects.select_for_update(of=("self",))
            .select_related("contact")
            .filter(pk__in=request_ids)
            .order_by("pk")
        }
        for message in held.filter(review_request_id__in=list(requests)).select_for_update(
            of=("self",)
        ):
            request = requests[message.review_request_id]
            requested = max(now, request.scheduled_for) if message.step == 0 else now
            send = policy.send_time(
                channel=message.channel, requested=requested, phone=request.contact.phone
            )
            message.due_at, message.last_error, message.last_error_code = send.at, "", ""
            message.save(
                update_fields=[
                    *message.transition(Message.Status.PENDING, at=now),
                    "due_at",
                    "last_error",
                    "last_error_code",
                ]
            )
            if message.step == 0 and request.status == ReviewRequest.Status.SCHEDULED:
                request.scheduled_for = send.at
                request.save(update_fields=["scheduled_for", "updated_at"])
            released += 1
        if released:
            transaction.on_commit(dispatcher_kick)
    return released


def _default_label(kind: str | None, url: str) -> str:
    if kind and kind != ReviewSite.Kind.CUSTOM:
        return ReviewSite.Kind(kind).label
    host = (urlsplit(url).hostname or url).removeprefix("www.")
    return host[:80]


def review_site_remove(*, owner: User, site_id: uuid.UUID) -> bool:
    """Remove one of the owner's review sites; False if they have no such site. Clicks already
    recorded keep their URL (the site link becomes empty)."""
    deleted, _ = ReviewSite.objects.filter(owner=owner, pk=site_id).delete()
    return bool(deleted)


def review_sites_reorder(
    *, owner: User, site_ids: Sequence[uuid.UUID], location_id: uuid.UUID | None = None
) -> list[ReviewSite]:
    """Put a location's review sites (``None``: the default location's) in the order of
    ``site_ids``, which must name each of them exactly once (``ValidationError`` otherwise).
    Returns the sites in their new order."""
    _, rows = _location_rows(owner, location_id)
    with transaction.atomic():
        sites = {site.pk: site for site in _sites(owner, rows).select_for_update()}
        if len(site_ids) != len(set(site_ids)) or set(site_ids) != set(sites):
            raise ValidationError("The list of review sites changed; reload the page.")
        ordered = [sites[pk] for pk in site_ids]
        for position, site in enumerate(ordered):
            site.position = position
        ReviewSite.objects.bulk_update(ordered, ["position"])
    return ordered


def review_site_move(*, owner: User, site_id: uuid.UUID, offset: int) -> bool:
    """Move one review site ``offset`` places (-1: up, 1: down) in its location's list; False
    if the owner has no such site. Moving past either end leaves it there."""
    site = ReviewSite.objects.filter(owner=owner, pk=site_id).first()
    if site is None:
        return False
    location_id, rows = _location_rows(owner, site.location_id)
    with transaction.atomic():
        order = list(_sites(owner, rows).select_for_update().values_list("pk", flat=True))
        if site_id not in order:
            return False
        index = order.index(site_id)
        target = min(max(index + offset, 0), len(order) - 1)
        order.insert(target, order.pop(index))
        review_sites_reorder(owner=owner, site_ids=order, location_id=location_id)
    return True


# Rows pinned per statement (``location_rows_pin``).
PIN_BATCH = 1000


def location_rows_pin(*, owner: User, location_id: uuid.UUID) -> int:
    """Give the account's review requests and review sites that have no location the location
    ``location_id`` (the default until now), ``PIN_BATCH`` rows a statement (outside a
    transaction: each batch commits on its own), so that a change of the default location never
    moves them (``accounts.signals.default_location_changing``). Returns how many were pinned.
    A request's other fields, ``updated_at`` included, stay as they are."""
    pinned = 0
    for model in (ReviewRequest, ReviewSite):
        unplaced = model.objects.filter(owner=owner, location__isnull=True)
        while ids := list(unplaced.values_list("pk", flat=True)[:PIN_BATCH]):
            pinned += unplaced.filter(pk__in=ids).update(location_id=location_id)
    return pinned


# --- Message wording ------------------------------------------------------------------------------
#
# ``location_id``: a location's own wording for the step, which its messages use; ``None``: the
# account's, which every location without its own uses (then the shipped default).


def message_template_draft(
    *,
    owner: User,
    channel: str,
    step: int,
    subject: str = "",
    body: str = "",
    location_id: uuid.UUID | None = None,
) -> MessageTemplate:
    """An unsaved template for ``(channel, step)``, cleaned (``ValidationError`` with field
    names when the text cannot be used): what a preview shows and what ``save`` would store."""
    if location_id is not None:
        _location_rows(owner, location_id)  # the account's, or UnknownLocation
    template = MessageTemplate(
        owner=owner,
        location_id=location_id,
        channel=channel,
        step=step,
        subject=subject,
        body=body,
    )
    # The owner's saved row for this step is the one being edited, not a duplicate of it.
    template.full_clean(validate_constraints=False)
    return template


def message_template_save(
    *,
    owner: User,
    channel: str,
    step: int,
    subject: str = "",
    body: str = "",
    location_id: uuid.UUID | None = None,
) -> MessageTemplate:
    """Store the wording for one step on one channel, the account's or a location's own
    (replacing what was there).

    Validated by ``MessageTemplate.clean()``: known merge fields only, ``{review_link}``
    required, an SMS names the business and gets "Reply STOP to opt out" when it offers no way
    to stop. Messages not yet sent use the new wording.
    """
    draft = message_template_draft(
        owner=owner, channel=channel, step=step, subject=subject, body=body, location_id=location_id
    )
    with transaction.atomic():
        mine = MessageTemplate.objects.select_for_update().filter(_at_location(location_id))
        template, _ = mine.get_or_create(
            owner=owner,
            channel=channel,
            step=step,
            defaults={"location_id": location_id, "subject": draft.subject, "body": draft.body},
        )
        template.subject, template.body = draft.subject, draft.body
        template.save(update_fields=["subject", "body", "updated_at"])
    return template


def message_template_reset(
    *, owner: User, channel: str, step: int, location_id: uuid.UUID | None = None
) -> bool:
    """Go back from the account's (or a location's own) wording for one step to what applies
    without it (the account's, then the shipped default); False if there was none."""
    deleted, _ = MessageTemplate.objects.filter(
        _at_location(location_id), owner=owner, channel=channel, step=step
    ).delete()
    return bool(deleted)


def _at_location(location_id: uuid.UUID | None) -> Q:
    """A template's own location: ``location_id``, or none (the account's wording)."""
    return Q(location__isnull=True) if location_id is None else Q(location_id=location_id)
