"""The counters behind the rate limits (``core.ratelimit``) and the login throttle: a fixed
window per bucket, in Redis or the database; also marks (``RateLimiter.remember``: a bucket set
to 1 for a given time, e.g. "this address logged in from this network", read with ``peek``).

Store: with ``REDIS_URL``, one Lua script per request (INCR and PEXPIRE, atomically; one round
trip). Without it (the embedded default), one ``INSERT ... ON CONFLICT DO UPDATE ... RETURNING``
statement on ``RateLimitCounter``, atomic across web processes (PostgreSQL row locks; SQLite
serialises writers).

If the store fails, requests are served without a limit (fail open): one warning is logged per
outage and process, each unlimited request is counted, and ``/readyz`` shows the counts under
``rate_limiter`` (information: it never fails readiness). A dead Redis costs a request at most
``REDIS_TIMEOUT_SECONDS`` (no retries), and then no more for ``REDIS_BACKOFF_SECONDS``: the
circuit stays open and requests skip Redis until it is tried again.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from django.conf import settings
from django.core.signals import setting_changed
from django.db import DatabaseError, connection
from django.db.models import F
from django.dispatch import receiver

from .db import delete_in_batches

logger = logging.getLogger(__name__)

T = TypeVar("T")

# A healthy Redis answers in well under a millisecond; a dead one must not hold requests up.
REDIS_TIMEOUT_SECONDS = 0.1
# After a failure, requests skip Redis (unlimited) for this long before it is tried again.
REDIS_BACKOFF_SECONDS = 5.0

LIMIT_HEADER = "X-RateLimit-Limit"
REMAINING_HEADER = "X-RateLimit-Remaining"
RESET_HEADER = "X-RateLimit-Reset"


@dataclass(frozen=True)
class Usage:
    """A bucket's state right after counting one request."""

    limit: int
    count: int  # requests in this window, this one included
    ends_at: float  # Unix epoch time at which the window ends
    enforced: bool = True  # False: the store was unreachable, the request is served unlimited

    @property
    def reset_at(self) -> int:
        """``X-RateLimit-Reset``: the window's end in whole epoch seconds (rounded up)."""
        return math.ceil(self.ends_at)

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.count)

    @property
    def exceeded(self) -> bool:
        return self.enforced and self.count > self.limit

    def retry_after(self, now: float | None = None) -> int:
        """Whole seconds until the window ends (at least 1)."""
        return max(1, math.ceil(self.ends_at - (time.time() if now is None else now)))

    def headers(self) -> dict[str, str]:
        return {
            LIMIT_HEADER: str(self.limit),
            REMAINING_HEADER: str(self.remaining),
            RESET_HEADER: str(self.reset_at),
        }


class StoreUnavailable(Exception):
    """The counter store could not count this request."""


class CounterStore(Protocol):
    name: str

    def incr(self, key: str, *, window: int, now: float) -> tuple[int, float]:
        """Count one request in ``key``'s window; returns (count, window end in epoch time)."""

    def peek(self, keys: list[str], *, now: float) -> list[tuple[int, float] | None]:
        """Each key's (count, window end) without counting (None when no window is open); one
        round trip."""

    def release(self, key: str, *, now: float) -> None:
        """Take one counted request back (never below zero; nothing once the window ended)."""

    def clear(self, key: str) -> None:
        """Forget ``key``'s window."""

    def put(self, key: str, *, seconds: int, now: float) -> None:
        """Set ``key`` to a count of 1 in a window ending ``seconds`` from ``now`` (a mark that
        something happened recently; setting it again starts its window again)."""


# KEYS[1]: the bucket; ARGV[1]: window in ms. Returns {count, ms until the window ends}.
_REDIS_SCRIPT = """
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}
"""
# KEYS: buckets. Returns {count, ms until the window ends} per bucket, {0, -2} when there is none.
_REDIS_PEEK_SCRIPT = """
local out = {}
for i, key in ipairs(KEYS) do
  local count = redis.call('GET', key)
  if count then
    table.insert(out, tonumber(count))
    table.insert(out, redis.call('PTTL', key))
  else
    table.insert(out, 0)
    table.insert(out, -2)
  end
end
return out
"""
# KEYS[1]: the bucket. DECR keeps the key's expiry; a missing key is left missing.
_REDIS_RELEASE_SCRIPT = """
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count > 0 then
  return redis.call('DECR', KEYS[1])
end
return 0
"""


class RedisStore:
    name = "redis"

    def __init__(self, url: str) -> None:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self.client = redis.Redis.from_url(
            url,
            socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
            socket_timeout=REDIS_TIMEOUT_SECONDS,
            # redis-py retries 3 times with backoff by default: seconds per request on a dead
            # server. One try; the circuit breaker below decides when to try again.
            retry=Retry(NoBackoff(), 0),
            health_check_interval=0,
        )
        # EVALSHA, falling back to EVAL once after a Redis restart (NOSCRIPT).
        self.script = self.client.register_script(_REDIS_SCRIPT)
        self.peek_script = self.client.register_script(_REDIS_PEEK_SCRIPT)
        self.release_script = self.client.register_script(_REDIS_RELEASE_SCRIPT)
        self._lock = threading.Lock()
        self._open_until = 0.0

    def _call(self, command: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        import redis

        if time.monotonic() < self._open_until:
            raise StoreUnavailable("redis: circuit open after a recent failure")
        try:
            return command(*args, **kwargs)
        except (redis.RedisError, OSError) as exc:
            with self._lock:
                self._open_until = time.monotonic() + REDIS_BACKOFF_SECONDS
            raise StoreUnavailable(f"redis: {type(exc).__name__}: {exc}") from exc

    def incr(self, key: str, *, window: int, now: float) -> tuple[int, float]:
        count, ttl_ms = self._call(self.script, keys=[key], args=[window * 1000])
        return int(count), now + int(ttl_ms) / 1000

    def peek(self, keys: list[str], *, now: float) -> list[tuple[int, float] | None]:
        flat = self._call(self.peek_script, keys=keys)
        pairs = zip(flat[::2], flat[1::2], strict=True)
        return [
            None if int(ttl_ms) < 0 else (int(count), now + int(ttl_ms) / 1000)
            for count, ttl_ms in pairs
        ]

    def release(self, key: str, *, now: float) -> None:
        self._call(self.release_script, keys=[key])

    def clear(self, key: str) -> None:
        self._call(self.client.delete, key)

    def put(self, key: str, *, seconds: int, now: float) -> None:
        self._call(self.client.set, key, 1, px=seconds * 1000)

    def close(self) -> None:
        self.client.close()


class DatabaseStore:
    """The embedded default's counters: one atomic upsert per request."""

    name = "database"

    def incr(self, key: str, *, window: int, now: float) -> tuple[int, float]:
        from .models import RateLimitCounter

        qn = connection.ops.quote_name
        table = qn(RateLimitCounter._meta.db_table)
        k, c, r = qn("key"), qn("count"), qn("reset_at")
        now_s = math.floor(now)
        # The existing row's window is reused until it ends; then the row starts a new one.
        sql = (
            f"INSERT INTO {table} ({k}, {c}, {r}) VALUES (%s, 1, %s) "
            f"ON CONFLICT ({k}) DO UPDATE SET "
            f"{c} = CASE WHEN {table}.{r} <= %s THEN 1 ELSE {table}.{c} + 1 END, "
            f"{r} = CASE WHEN {table}.{r} <= %s THEN %s ELSE {table}.{r} END "
            f"RETURNING {c}, {r}"
        )
        end = now_s + window
        try:
            # One statement, atomic by itself (autocommit: the limiter runs before any view
            # opens a transaction); one round trip.
            with connection.cursor() as cursor:
                cursor.execute(sql, [key, end, now_s, now_s, end])
                count, reset_at = cursor.fetchone()
        except DatabaseError as exc:
            raise StoreUnavailable(f"database: {type(exc).__name__}: {exc}") from exc
        return int(count), float(reset_at)

    def peek(self, keys: list[str], *, now: float) -> list[tuple[int, float] | None]:
        from .models import RateLimitCounter

        try:
            rows = {
                key: (int(count), float(reset_at))
                for key, count, reset_at in RateLimitCounter.objects.filter(
                    key__in=keys, reset_at__gt=math.floor(now)
                ).values_list("key", "count", "reset_at")
            }
        except DatabaseError as exc:
            raise StoreUnavailable(f"database: {type(exc).__name__}: {exc}") from exc
        return [rows.get(key) for key in keys]

    def release(self, key: str, *, now: float) -> None:
        from .models import RateLimitCounter

        try:
            RateLimitCounter.objects.filter(
                key=key, count__gt=0, reset_at__gt=math.floor(now)
            ).update(count=F("count") - 1)
        except DatabaseError as exc:
            raise StoreUnavailable(f"database: {type(exc).__name__}: {exc}") from exc

    def clear(self, key: str) -> None:
        from .models import RateLimitCounter

        try:
            RateLimitCounter.objects.filter(key=key).delete()
        except DatabaseError as exc:
            raise StoreUnavailable(f"database: {type(exc).__name__}: {exc}") from exc

    def put(self, key: str, *, seconds: int, now: float) -> None:
        from .models import RateLimitCounter

        try:
            RateLimitCounter.objects.update_or_create(
                key=key, defaults={"count": 1, "reset_at": math.floor(now) + seconds}
            )
        except DatabaseError as exc:
            raise StoreUnavailable(f"database: {type(exc).__name__}: {exc}") from exc


class Health:
    """Process-local counts of the limiter's failures, for ``/readyz``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.failures = 0  # requests served without a limit because the store failed
        self.last_error: str | None = None
        self.last_failure_at: float | None = None
        self.failing = False

    def record_failure(self, error: str) -> bool:
        """Count one unlimited request; True when this starts an outage (log it once)."""
        with self._lock:
            self.failures += 1
            self.last_error = error[:300]
            self.last_failure_at = time.time()
            started, self.failing = not self.failing, True
        return started

    def record_success(self) -> bool:
        """True when this ends an outage."""
        with self._lock:
            ended, self.failing = self.failing, False
        return ended

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            last = self.last_failure_at
            return {
                "failing": self.failing,
                "unlimited_requests": self.failures,
                "last_error": self.last_error,
                "last_failure_at": (
                    None
                    if last is None
                    else datetime.fromtimestamp(last, tz=UTC).isoformat(timespec="seconds")
                ),
            }


class RateLimiter:
    def __init__(self, store: CounterStore) -> None:
        self.store = store
        self.health = Health()

    def hit(self, bucket: str, *, limit: int | None = None, now: float | None = None) -> Usage:
        """Count one request in ``bucket`` against ``limit`` per window (the API's
        ``RATE_LIMIT_PER_HOUR`` by default). Never raises: a failing store means no limit."""
        now = time.time() if now is None else now
        limit = settings.RATE_LIMIT_PER_HOUR if limit is None else limit
        window = settings.RATE_LIMIT_WINDOW_SECONDS
        try:
            count, ends_at = self.store.incr(
                f"{settings.RATE_LIMIT_KEY_PREFIX}:{bucket}", window=window, now=now
            )
        except StoreUnavailable as exc:
            if self.health.record_failure(str(exc)):
                logger.warning(
                    "rate limiter store unavailable; serving requests without a limit",
                    extra={"store": self.store.name, "error": str(exc)[:300]},
                )
            return Usage(limit=limit, count=0, ends_at=now + window, enforced=False)
        if self.health.record_success():
            logger.warning("rate limiter store is back", extra={"store": self.store.name})
        return Usage(limit=limit, count=count, ends_at=ends_at)

    def peek(self, *buckets: str, limit: int, now: float | None = None) -> list[Usage]:
        """Each bucket's state without counting anything (an empty window when it has none),
        in one round trip to the store."""
        now = time.time() if now is None else now
        window = settings.RATE_LIMIT_WINDOW_SECONDS
        keys = [f"{settings.RATE_LIMIT_KEY_PREFIX}:{bucket}" for bucket in buckets]
        try:
            found = self.store.peek(keys, now=now)
        except StoreUnavailable as exc:
            self.health.record_failure(str(exc))
            return [Usage(limit=limit, count=0, ends_at=now + window, enforced=False)] * len(keys)
        return [
            Usage(limit=limit, count=count, ends_at=ends_at)
            for count, ends_at in (each or (0, now + window) for each in found)
        ]

    def release(self, bucket: str, *, now: float | None = None) -> None:
        """Take back one request counted in ``bucket`` (a success that must not count)."""
        now = time.time() if now is None else now
        try:
            self.store.release(f"{settings.RATE_LIMIT_KEY_PREFIX}:{bucket}", now=now)
        except StoreUnavailable as exc:
            self.health.record_failure(str(exc))

    def clear(self, bucket: str) -> None:
        """Forget ``bucket``'s window (an operator lifting a lock). Raises ``StoreUnavailable``."""
        self.store.clear(f"{settings.RATE_LIMIT_KEY_PREFIX}:{bucket}")

    def remember(self, bucket: str, *, seconds: int, now: float | None = None) -> None:
        """Mark ``bucket`` for ``seconds`` from now (``peek`` then counts 1 in it), whether or
        not it was marked before. Never raises: a failing store remembers nothing."""
        now = time.time() if now is None else now
        try:
            self.store.put(f"{settings.RATE_LIMIT_KEY_PREFIX}:{bucket}", seconds=seconds, now=now)
        except StoreUnavailable as exc:
            self.health.record_failure(str(exc))

    def status(self) -> dict[str, Any]:
        return {"ok": True, "store": self.store.name, **self.health.snapshot()}


_limiter: RateLimiter | None = None
_limiter_lock = threading.Lock()


def get_limiter() -> RateLimiter:
    global _limiter
    if _limiter is None:
        with _limiter_lock:
            if _limiter is None:
                store = RedisStore(settings.REDIS_URL) if settings.REDIS_URL else DatabaseStore()
                _limiter = RateLimiter(store)
    return _limiter


@receiver(setting_changed)
def _reset_limiter(*, setting: str, **kwargs: Any) -> None:
    global _limiter
    if setting == "REDIS_URL" and _limiter is not None:
        if isinstance(_limiter.store, RedisStore):
            _limiter.store.close()
        _limiter = None


def rate_limit_counters_purge(*, now: float | None = None) -> int:
    """Delete database counter rows whose window has ended; returns how many. Idempotent."""
    from .models import RateLimitCounter

    cutoff = math.floor(time.time() if now is None else now)
    deleted, _ = delete_in_batches(RateLimitCounter.objects.filter(reset_at__lte=cutoff))
    return deleted


def readiness_status() -> dict[str, Any]:
    """For ``/readyz``: the store and this process's failure counts (never fails readiness)."""
    return get_limiter().status()
