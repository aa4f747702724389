"""core.db.delete_in_batches: housekeeping deletes in bounded transactions."""

from __future__ import annotations

import math

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.db import delete_in_batches
from core.models import RateLimitCounter
from tests.support.row_counts import statement_row_counts

pytestmark = pytest.mark.django_db


def make_counters(expired: int, live: int) -> None:
    RateLimitCounter.objects.bulk_create(
        [RateLimitCounter(key=f"old-{i}", count=1, reset_at=100) for i in range(expired)]
        + [RateLimitCounter(key=f"live-{i}", count=1, reset_at=10**10) for i in range(live)]
    )


def test_a_purge_of_more_rows_than_a_batch_deletes_them_all_and_only_them():
    make_counters(expired=23, live=5)
    with statement_row_counts() as counts:
        result = delete_in_batches(RateLimitCounter.objects.filter(reset_at__lte=200), batch_size=4)
    assert result == (23, {"core.RateLimitCounter": 23})
    assert sorted(RateLimitCounter.objects.values_list("key", flat=True)) == [
        f"live-{i}" for i in range(5)
    ]
    # No statement touched more than one batch of rows.
    assert max(counts) == 4


@pytest.mark.parametrize("expired", [0, 4, 9])
def test_queries_per_batch_are_bounded(expired):
    make_counters(expired=expired, live=1)
    with CaptureQueriesContext(connection) as queries:
        delete_in_batches(RateLimitCounter.objects.filter(reset_at__lte=200), batch_size=4)
    # A full batch is one more round (the loop stops at the first short one); each round is a
    # SELECT of primary keys, a DELETE, and the transaction's savepoint and release.
    rounds = math.floor(expired / 4) + 1
    assert len(queries) <= 4 * rounds
    assert RateLimitCounter.objects.count() == 1


def test_the_default_batch_is_the_setting(settings):
    settings.PURGE_BATCH_SIZE = 3
    make_counters(expired=7, live=0)
    with statement_row_counts() as counts:
        assert delete_in_batches(RateLimitCounter.objects.all())[0] == 7
    assert max(counts) == 3
    assert not RateLimitCounter.objects.exists()


def test_a_batch_size_below_one_is_refused():
    with pytest.raises(ValueError):
        delete_in_batches(RateLimitCounter.objects.all(), batch_size=0)
