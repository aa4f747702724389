"""reviews.services.outcomes: the backoff between attempts grows exponentially, with jitter, and
honours Retry-After."""

from __future__ import annotations

import pytest

from reviews.services.outcomes import backoff_seconds

pytestmark = pytest.mark.django_db


def test_backoff_grows_exponentially_with_jitter_and_honours_retry_after(settings):
    settings.DELIVERY_RETRY_BASE_SECONDS = 30
    settings.DELIVERY_RETRY_MAX_SECONDS = 3600
    for attempt, ceiling in [(1, 30), (2, 60), (3, 120), (4, 240), (10, 3600)]:
        delays = {backoff_seconds(attempt) for _ in range(50)}
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(delays) > 1  # jittered
    assert backoff_seconds(1, retry_after=500) == 500
