"""``Idempotency-Key`` for POST endpoints: a retried request never does the work twice.

Automation platforms retry (Zapier's replay and Autoreplay run a create again hours later), so
a client sends a key derived from its input, and we answer a repeat with the first response:

* first request with a key: the key is claimed (row ``in_progress``) by one committed
  statement (``IdempotencyKey.objects.claim``), then the work runs and its response is stored
  (``done``) in one transaction, so the work and its stored response commit together: a crash
  between them cannot leave work done with no response to replay;
* same key, same body (sha256 of the canonical JSON, so key order and whitespace do not
  matter): the stored status and body, with ``Idempotent-Replayed: true``;
* same key, different body: 422 ``idempotency_key_reused``;
* same key while the first is still running: 409 ``idempotency_in_progress`` with
  ``Retry-After``; a claim older than ``STALE_AFTER`` (its process died between claiming and
  storing) is taken over by the retry;
* key longer than 255 characters, empty, or not visible ASCII: 400.

Like Stripe, only responses of requests that passed validation are stored: a 400 from
validation releases the key, so a corrected retry with the same key works; an exception (a
500) releases it too, so nothing that failed half-way is replayed. Keys are scoped per user (one
business can never read another's responses) and kept ``IDEMPOTENCY_KEY_TTL_HOURS`` (72 h by
default: longer than Zapier's ~10.5 h Autoreplay window and Stripe's 24 h); the hourly beat
task ``purge_idempotency_keys`` deletes older ones.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from rest_framework.response import Response

from accounts.models import User
from core.db import delete_in_batches
from core.errors import ApiError

from .models import IdempotencyKey
from .permissions import AuthenticatedRequest

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_KEY_LENGTH = 255
# A claim this old belongs to a request that died before storing its response (web timeouts
# are 30 s), so a retry may take it over.
STALE_AFTER = timedelta(seconds=60)
RETRY_AFTER_SECONDS = 2
_KEY_CHARS = re.compile(r"[\x21-\x7e]+")


def ttl() -> timedelta:
    return timedelta(hours=settings.IDEMPOTENCY_KEY_TTL_HOURS)


def idempotent(
    request: AuthenticatedRequest, *, endpoint: str, handler: Callable[[], Response]
) -> Response:
    """Run ``handler`` at most once per (account, ``Idempotency-Key``); no header: just run it.

    With a key: claim it, then run ``handler`` and store its response in one transaction, so
    the response commits with the work (``handler`` may open transactions of its own: they
    become savepoints of this one). A response of 500 or more, or an exception, is not stored
    and the key is released: a retry runs afresh.

    ``request.data`` must already be parsed (a body that is not JSON never claims a key).
    """
    key = request.headers.get(HEADER)
    if key is None:
        return handler()
    if not 0 < len(key) <= MAX_KEY_LENGTH or not _KEY_CHARS.fullmatch(key):
        raise ApiError(
            400,
            "invalid_request",
            f"The {HEADER} header must be 1 to {MAX_KEY_LENGTH} visible ASCII characters "
            "(a UUID is a good choice).",
            fields={HEADER: [f"Must be 1 to {MAX_KEY_LENGTH} visible ASCII characters."]},
        )
    claim = idempotency_key_claim(
        owner=request.user.account or request.user,  # per account, whoever of it calls
        key=key,
        endpoint=endpoint,
        fingerprint=request_fingerprint(endpoint=endpoint, data=request.data),
    )
    if claim.replay is not None:
        status, body = claim.replay
        return Response(body, status=status, headers={REPLAYED_HEADER: "true"})
    try:
        with transaction.atomic():
            response = handler()
            if response.status_code < 500:
                idempotency_key_complete(
                    claim=claim.row, status=response.status_code, body=response.data
                )
    except BaseException:
        # Validation failures (400) and crashes (500) are not stored: a retry runs afresh.
        idempotency_key_release(claim=claim.row)
        raise
    if response.status_code >= 500:
        idempotency_key_release(claim=claim.row)
    return response


def request_fingerprint(*, endpoint: str, data: Any) -> str:
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{endpoint}\n{canonical}".encode()).hexdigest()


@dataclass(frozen=True)
class Claim:
    row: IdempotencyKey
    replay: tuple[int, Any] | None = None  # (status, body) of the stored first response


def idempotency_key_claim(
    *, owner: User, key: str, endpoint: str, fingerprint: str, now: datetime | None = None
) -> Claim:
    """Claim ``key`` for a new run, or return the stored response to replay.

    Commits before returning (one autocommitted statement), so concurrent requests see the
    claim.
    Raises ``ApiError`` 422 for a key reused with another body, 409 while the first runs.
    """
    now = now or timezone.now()
    for _ in range(2):
        claimed = IdempotencyKey.objects.claim(
            owner=owner, key=key, endpoint=endpoint, fingerprint=fingerprint, now=now
        )
        if claimed is not None:
            return Claim(claimed)
        row = IdempotencyKey.objects.filter(owner=owner, key=key).first()
        if row is None:
            continue  # purged between the insert and this read: claim afresh
        if row.created_at <= now - ttl():
            # Expired but not purged yet: forget it and claim afresh.
            IdempotencyKey.objects.filter(pk=row.pk, created_at=row.created_at).delete()
            continue
        break
    else:
        # Twice in a row another request re-created the key between our statements.
        raise _in_progress()
    if row.fingerprint != fingerprint:
        raise ApiError(
            422,
            "idempotency_key_reused",
            f"This {HEADER} was already used with a different request body. Use a new key "
            "for a different request.",
        )
    # A done row always has its status: idempotency_key_complete stores both in one UPDATE.
    if row.state == IdempotencyKey.State.DONE and row.response_status is not None:
        return Claim(row, replay=(row.response_status, json.loads(row.response_body)))
    if row.locked_at <= now - STALE_AFTER:
        # The first run died without storing a response: take the claim over, unless another
        # retry just did (0 rows).
        taken = IdempotencyKey.objects.filter(
            pk=row.pk, state=IdempotencyKey.State.IN_PROGRESS, locked_at=row.locked_at
        ).update(locked_at=now)
        if taken:
            row.locked_at = now
            return Claim(row)
    raise _in_progress()


def _in_progress() -> ApiError:
    return ApiError(
        409,
        "idempotency_in_progress",
        f"A request with this {HEADER} is still being processed. Retry in a few seconds.",
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


def idempotency_key_complete(*, claim: IdempotencyKey, status: int, body: Any) -> None:
    """Store the response. A no-op if the claim was taken over meanwhile (its owner stores)."""
    IdempotencyKey.objects.complete(
        row=claim, status=status, body=json.dumps(body, ensure_ascii=False), now=timezone.now()
    )


def idempotency_key_release(*, claim: IdempotencyKey) -> None:
    """Forget an unfinished claim so that a retry runs the request afresh."""
    IdempotencyKey.objects.filter(
        pk=claim.pk, state=IdempotencyKey.State.IN_PROGRESS, locked_at=claim.locked_at
    ).delete()


def idempotency_keys_purge(*, now: datetime | None = None) -> int:
    """Delete keys older than the TTL; returns how many. Idempotent."""
    cutoff = (now or timezone.now()) - ttl()
    deleted, _ = delete_in_batches(IdempotencyKey.objects.filter(created_at__lte=cutoff))
    return deleted
