"""The rate limiter's counter stores (core.ratelimit_store): every concurrent request counted
exactly once (database and Redis), ended windows purged, and an unreachable Redis not tried again
until its back-off ends."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from core import ratelimit_store
from core.models import RateLimitCounter
from core.ratelimit_store import DatabaseStore, RateLimiter, RedisStore, StoreUnavailable
from tests.support.processes import free_port
from tests.support.row_counts import statement_row_counts

pytestmark = pytest.mark.django_db


def _hit_concurrently(limiter: RateLimiter, bucket: str, threads: int, each: int) -> list[int]:
    counts: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def worker():
        try:
            start.wait()
            for _ in range(each):
                usage = limiter.hit(bucket)
                with lock:
                    counts.append(usage.count)
        finally:
            connection.close()

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(60)
    return counts


@pytest.mark.django_db(transaction=True)
def test_database_counter_counts_every_concurrent_request_once():
    # Real connections from several threads (PostgreSQL in CI, the SQLite file locally): the
    # one-statement upsert must hand out every count exactly once.
    limiter = RateLimiter(DatabaseStore())
    counts = _hit_concurrently(limiter, "user:concurrency", threads=8, each=25)
    assert sorted(counts) == list(range(1, 201))
    assert limiter.health.failures == 0
    assert RateLimitCounter.objects.get().count == 200


@pytest.mark.redis
def test_redis_counter_counts_every_concurrent_request_once(settings):
    limiter = RateLimiter(RedisStore(settings.REDIS_URL))
    counts = _hit_concurrently(limiter, "user:concurrency", threads=8, each=25)
    assert sorted(counts) == list(range(1, 201))
    assert limiter.health.failures == 0


def test_database_counter_rows_are_purged_once_their_window_ends():
    store = DatabaseStore()
    now = time.time()
    store.incr("rr:rl:old", window=60, now=now - 120)
    store.incr("rr:rl:current", window=3600, now=now)
    assert ratelimit_store.rate_limit_counters_purge(now=now) == 1
    assert list(RateLimitCounter.objects.values_list("key", flat=True)) == ["rr:rl:current"]


def test_the_counter_purge_deletes_in_bounded_batches(settings):
    settings.PURGE_BATCH_SIZE = 2
    RateLimitCounter.objects.bulk_create(
        RateLimitCounter(key=f"rr:rl:old-{n}", count=1, reset_at=100) for n in range(5)
    )
    RateLimitCounter.objects.create(key="rr:rl:current", count=1, reset_at=10**10)
    with statement_row_counts() as counts:
        assert ratelimit_store.rate_limit_counters_purge(now=200) == 5
    assert max(counts) <= 2
    assert list(RateLimitCounter.objects.values_list("key", flat=True)) == ["rr:rl:current"]


def test_an_unreachable_redis_is_not_tried_again_until_the_back_off_ends(monkeypatch):
    store = RedisStore(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    calls = []
    real_script = store.script
    monkeypatch.setattr(store, "script", lambda **kw: calls.append(kw) or real_script(**kw))
    with pytest.raises(StoreUnavailable):
        store.incr("k", window=60, now=time.time())
    with pytest.raises(StoreUnavailable, match="circuit open"):
        store.incr("k", window=60, now=time.time())
    assert len(calls) == 1
    monkeypatch.setattr(ratelimit_store, "REDIS_BACKOFF_SECONDS", 0.0)
    store._open_until = 0.0
    with pytest.raises(StoreUnavailable, match="ConnectionError"):
        store.incr("k", window=60, now=time.time())
    assert len(calls) == 2


@pytest.fixture(params=["database", pytest.param("redis", marks=pytest.mark.redis)])
def store(request, settings):
    return DatabaseStore() if request.param == "database" else RedisStore(settings.REDIS_URL)


def test_peek_release_and_clear_count_nothing_new(store, settings):
    limiter = RateLimiter(store)
    bucket, other = f"peek:{time.time_ns()}", f"peek-other:{time.time_ns()}"

    def count() -> int:
        return limiter.peek(bucket, limit=5)[0].count

    [empty] = limiter.peek(bucket, limit=5)
    assert (empty.count, empty.remaining, empty.enforced) == (0, 5, True)
    first = limiter.hit(bucket, limit=5)
    limiter.hit(bucket, limit=5)
    limiter.hit(other, limit=5)
    seen, seen_other = limiter.peek(bucket, other, limit=5)  # one round trip for both
    assert (seen.count, seen_other.count) == (2, 1)
    assert seen.reset_at == first.reset_at  # the same window
    limiter.release(bucket)
    assert count() == 1
    limiter.release(bucket)
    limiter.release(bucket)  # never below zero
    assert count() == 0
    assert limiter.hit(bucket, limit=5).count == 1
    limiter.clear(bucket)
    assert count() == 0
    limiter.release(bucket)  # a bucket with no window stays without one
    assert limiter.hit(bucket, limit=5).count == 1
    assert limiter.health.failures == 0
