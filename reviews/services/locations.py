"""Moving a location's review requests to another location of the account (staff, from the
admin: a location merged into another, requests added at the wrong one).

A location's requests may be many (a busy clinic: hundreds of thousands), so they move in
batches, each its own short transaction that locks only its own rows: the portal, the API and
the delivery engine keep working on the rest of the table meanwhile. A contact has at most one
active request per location (``reviews_request_one_active_per_contact_location``): an active
request whose contact already has one at the target stays where it is, and is counted.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import User

from ..models import BusinessSettings, ReviewRequest
from ..selectors import RequestsMove, requests_move_ends, review_requests_held_back_at
from .business import messages_release_waiting

logger = logging.getLogger(__name__)

# Where a batch ends: its last request's (created_at, id), newest first.
Cursor = tuple[datetime, uuid.UUID]

# Requests per batch: one short transaction and one UPDATE each.
MOVE_BATCH_SIZE = 500
# A batch refused by the unique constraint (a request added at the target for one of its
# contacts after the batch was read) is read again this many times, then given up.
_BATCH_ATTEMPTS = 3


def location_requests_move(
    *,
    owner: User,
    from_location_id: uuid.UUID,
    to_location_id: uuid.UUID,
    batch_size: int = MOVE_BATCH_SIZE,
) -> RequestsMove:
    """Move every review request of the location ``from_location_id`` (with no location: the
    default's) to ``to_location_id``, another location of the same account, ``batch_size``
    requests a transaction (outside any transaction: each batch commits on its own; run again,
    it moves what is left). An active request whose contact already has an active request at
    the target is left in place (never two active requests of one contact at one location).
    Returns how many moved and how many were left.

    A moved request changes (``updated_at``: the API's ``since`` shows it at its new
    location); its messages follow its new location's review sites, sender and window from
    their next send; those held for a review site are released if the target lists one
    (``messages_release_waiting``). ``ValidationError`` for the same location twice;
    ``Location.DoesNotExist`` for a location that is not the account's."""
    ends = requests_move_ends(
        owner=owner, from_location_id=from_location_id, to_location_id=to_location_id
    )
    source_id, target_id, at_target = ends.source_id, ends.target_id, ends.target_rows
    # One part per index range of ``reviews_request_location_list``: the location's own rows,
    # then (the default location) the rows with no location.
    parts = [Q(location_id=source_id)]
    if source_id == ends.default_id:
        parts.append(Q(location__isnull=True))
    moved = left = 0
    for part in parts:
        after: Cursor | None = None
        while True:
            batch = _move_batch(
                owner=owner,
                rows=part,
                after=after,
                target_id=target_id,
                at_target=at_target,
                size=batch_size,
            )
            if batch is None:
                break
            after, done, kept = batch
            moved, left = moved + done, left + kept
    with transaction.atomic():
        BusinessSettings.lock_for(owner)  # as adding a site does: no held message missed
        messages_release_waiting(owner=owner, location_id=target_id)
    logger.info(
        "location requests moved",
        extra={
            "owner_id": str(owner.pk),
            "from_location_id": str(source_id),
            "to_location_id": str(target_id),
            "moved": moved,
            "left": left,
        },
    )
    return RequestsMove(moved=moved, left=left)


def _move_batch(
    *,
    owner: User,
    rows: Q,
    after: Cursor | None,
    target_id: uuid.UUID,
    at_target: Q,
    size: int,
) -> tuple[Cursor, int, int] | None:
    """The next ``size`` requests of ``rows`` after ``after`` (newest first, on the location's
    index), locked and moved, in one transaction: the last one's (created_at, id), how many
    moved and how many were left. ``None`` when there are none left."""
    for attempt in range(1, _BATCH_ATTEMPTS + 1):
        try:
            with transaction.atomic():
                return _move_locked_batch(owner, rows, after, target_id, at_target, size)
        except IntegrityError:
            # A request for one of these contacts was added at the target meanwhile: read the
            # batch again, which now leaves that one in place.
            if attempt == _BATCH_ATTEMPTS:
                raise
    return None  # pragma: no cover (the loop returns or raises)


def _move_locked_batch(
    owner: User, rows: Q, after: Cursor | None, target_id: uuid.UUID, at_target: Q, size: int
) -> tuple[Cursor, int, int] | None:
    requests = ReviewRequest.objects.filter(rows, owner=owner)
    if after is not None:
        created_at, pk = after
        requests = requests.filter(
            Q(created_at__lt=created_at) | Q(created_at=created_at, pk__lt=pk)
        )
    batch = list(
        requests.order_by("-created_at", "-id")
        .select_for_update(of=("self",))
        .values_list("pk", "created_at")[:size]
    )
    if not batch:
        return None
    ids = [pk for pk, _ in batch]
    mine = ReviewRequest.objects.filter(pk__in=ids)
    held_back = set(review_requests_held_back_at(mine, at=at_target).values_list("pk", flat=True))
    moved = mine.exclude(pk__in=held_back).update(location_id=target_id, updated_at=timezone.now())
    last_pk, last_created_at = batch[-1]
    return (last_created_at, last_pk), moved, len(held_back)
