"""``Idempotency-Key`` for POST endpoints: a retried request never does the work twice.

Automation platforms retry (Zapier's replay and Autoreplay run a create again hours later), so
a client sends a key derived from its input, and we answer a repeat with the first response:

* first request with a key: the key is claimed (row ``in_progress``) by one committed
  ``INSERT ... ON CONFLICT DO NOTHING`` statement (on PostgreSQL its commit does not wait for
  the WAL flush: the work's synchronous commit after it flushes the claim too), the work runs,
  and its response is stored
  (``done``), in the work's own transaction where the handler offers one (so the work and its
  stored response commit together: a crash between them cannot leave work done with no
  response to replay), else right after;
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

import functools
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Field
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.models import User
from core.errors import ApiError
from reviews import rows
from reviews.rows import Statement

from .models import IdempotencyKey

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


class ResponseStore:
    """Given to an ``idempotent`` handler: stores its response with its work."""

    def __init__(self, claim: IdempotencyKey) -> None:
        self._claim = claim
        self.handed_out = False

    def statement(self, status: int, body: Any) -> Statement:
        """The statement that stores ``(status, body)`` as the key's response. The handler
        runs it in its work's transaction, beside its last write (one round trip where the
        database allows), so the response commits or rolls back with the work."""
        self.handed_out = True
        return idempotency_key_complete_statement(claim=self._claim, status=status, body=body)


def idempotent(
    request: Request, *, endpoint: str, handler: Callable[[ResponseStore | None], Response]
) -> Response:
    """Run ``handler`` at most once per (user, ``Idempotency-Key``); no header: just run it.

    ``handler`` gets a ``ResponseStore`` (``None`` without a key). A handler whose work is
    one transaction runs ``store.statement(status, body)`` inside that transaction, with the
    response it is about to return: the response then commits with the work, with no commit
    or round trip of its own. A handler that does not ask for it has its response stored
    after it returns.

    ``request.data`` must already be parsed (a body that is not JSON never claims a key).
    """
    key = request.headers.get(HEADER)
    if key is None:
        return handler(None)
    if not 0 < len(key) <= MAX_KEY_LENGTH or not _KEY_CHARS.fullmatch(key):
        raise ApiError(
            400,
            "invalid_request",
            f"The {HEADER} header must be 1 to {MAX_KEY_LENGTH} visible ASCII characters "
            "(a UUID is a good choice).",
            fields={HEADER: [f"Must be 1 to {MAX_KEY_LENGTH} visible ASCII characters."]},
        )
    claim = idempotency_key_claim(
        owner=request.user,
        key=key,
        endpoint=endpoint,
        fingerprint=request_fingerprint(endpoint=endpoint, data=request.data),
    )
    if claim.replay is not None:
        status, body = claim.replay
        return Response(body, status=status, headers={REPLAYED_HEADER: "true"})
    store = ResponseStore(claim.row)
    try:
        response = handler(store)
    except BaseException:
        # Validation failures (400) and crashes (500) are not stored: a retry runs afresh.
        # (A response stored in a transaction that then rolled back went with it.)
        idempotency_key_release(claim=claim.row)
        raise
    if store.handed_out:
        return response  # stored with the work, in its transaction
    if response.status_code >= 500:
        idempotency_key_release(claim=claim.row)
    else:
        idempotency_key_complete(claim=claim.row, status=response.status_code, body=response.data)
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
        claimed = _insert_claim(
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
    if row.state == IdempotencyKey.State.DONE:
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


def _insert_claim(
    *, owner: User, key: str, endpoint: str, fingerprint: str, now: datetime
) -> IdempotencyKey | None:
    """The new claim, or None if (owner, key) exists: one statement, committed by itself
    (autocommit), so a concurrent request with the same key sees it at once. One round trip
    instead of a transaction with a SELECT, a savepoint and an INSERT."""
    row = IdempotencyKey(
        owner=owner,
        key=key,
        endpoint=endpoint,
        fingerprint=fingerprint,
        state=IdempotencyKey.State.IN_PROGRESS,
        response_body="",
        created_at=now,
        locked_at=now,
    )
    db = connections[DEFAULT_DB_ALIAS]
    params = [f.get_db_prep_save(getattr(row, f.attname), db) for f in _claim_fields()]
    # Inside a caller's transaction the statement would set the whole transaction's commit:
    # then it is a plain INSERT, committed with the caller's work.
    async_commit = db.vendor == "postgresql" and not db.in_atomic_block
    with db.cursor() as cursor:
        cursor.execute(_claim_sql(async_commit), params)
        inserted = cursor.fetchone()
    if inserted is None:
        return None
    row.pk = inserted[0]
    row._state.adding = False
    return row


@functools.cache
def _claim_fields() -> list[Field]:
    names = ("owner", "key", "endpoint", "fingerprint", "state", "response_body", "created_at",
             "locked_at")  # fmt: skip
    return [IdempotencyKey._meta.get_field(name) for name in names]


@functools.cache
def _claim_sql(async_commit: bool) -> str:
    """The claim's INSERT. With ``async_commit`` (PostgreSQL, autocommit), its transaction,
    the statement alone, commits without waiting for the WAL flush:
    ``set_config('synchronous_commit', 'off', true)`` inside the statement, so still one round
    trip. A concurrent request sees the claim at once all the same, and the claim needs no
    durability of its own: WAL is flushed in order, so the work's transaction, which commits
    synchronously after it, makes the claim durable with the work, and a crash before that
    loses both, as a crash before the claim would: the retry runs afresh. One WAL flush per
    new contact instead of two (docs/benchmarks.md, ninth pass).
    """
    qn = connections[DEFAULT_DB_ALIAS].ops.quote_name
    columns = ", ".join(qn(f.column) for f in _claim_fields())
    values = ", ".join(["%s"] * len(_claim_fields()))
    if async_commit:
        source = (
            f"SELECT {values} "
            "FROM (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit"
        )
    else:
        source = f"VALUES ({values})"
    return (
        f"INSERT INTO {qn(IdempotencyKey._meta.db_table)} ({columns}) {source} "
        f"ON CONFLICT ({qn('owner_id')}, {qn('key')}) DO NOTHING RETURNING {qn('id')}"
    )


def idempotency_key_complete(*, claim: IdempotencyKey, status: int, body: Any) -> None:
    """Store the response. A no-op if the claim was taken over meanwhile (its owner stores).

    Every idempotent write runs this: one statement written once, not an ORM update
    compiled per request (docs/benchmarks.md).
    """
    rows.run([idempotency_key_complete_statement(claim=claim, status=status, body=body)])


def idempotency_key_complete_statement(
    *, claim: IdempotencyKey, status: int, body: Any
) -> Statement:
    """``idempotency_key_complete`` as a statement, for a caller to send with its own."""
    db = connections[DEFAULT_DB_ALIAS]
    field = IdempotencyKey._meta.get_field
    return (
        _complete_sql(),
        [
            IdempotencyKey.State.DONE.value,
            status,
            json.dumps(body, ensure_ascii=False),
            field("completed_at").get_db_prep_save(timezone.now(), db),
            claim.pk,
            IdempotencyKey.State.IN_PROGRESS.value,
            field("locked_at").get_db_prep_save(claim.locked_at, db),
        ],
    )


@functools.cache
def _complete_sql() -> str:
    qn = connections[DEFAULT_DB_ALIAS].ops.quote_name
    return (
        f"UPDATE {qn(IdempotencyKey._meta.db_table)} SET {qn('state')} = %s, "
        f"{qn('response_status')} = %s, {qn('response_body')} = %s, {qn('completed_at')} = %s "
        f"WHERE {qn('id')} = %s AND {qn('state')} = %s AND {qn('locked_at')} = %s"
    )


def idempotency_key_release(*, claim: IdempotencyKey) -> None:
    """Forget an unfinished claim so that a retry runs the request afresh."""
    IdempotencyKey.objects.filter(
        pk=claim.pk, state=IdempotencyKey.State.IN_PROGRESS, locked_at=claim.locked_at
    ).delete()


def idempotency_keys_purge(*, now: datetime | None = None) -> int:
    """Delete keys older than the TTL; returns how many. Idempotent."""
    cutoff = (now or timezone.now()) - ttl()
    deleted, _ = IdempotencyKey.objects.filter(created_at__lte=cutoff).delete()
    return deleted
