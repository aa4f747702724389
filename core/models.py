"""State of core's shared infrastructure: the rate limiter's database counters."""

from __future__ import annotations

from django.db import models


class RateLimitCounter(models.Model):
    """One rate-limit window of one bucket, for the embedded default (no ``REDIS_URL``).

    Updated only by one atomic ``INSERT ... ON CONFLICT DO UPDATE ... RETURNING`` statement
    (``core/ratelimit_store.py``), so concurrent requests in several web processes never lose a
    count. Rows whose window has ended are reused in place and purged hourly by beat.
    """

    key = models.CharField(max_length=200, primary_key=True)
    count = models.PositiveIntegerField()
    reset_at = models.BigIntegerField(
        db_index=True, help_text="Unix epoch seconds at which this window ends."
    )

    class Meta:
        # The table the connector API created before the rate limiter moved to core: kept, with
        # its rows (core's migration 0001 takes it over without touching the database).
        db_table = "connector_api_ratelimitcounter"

    def __str__(self) -> str:
        return f"{self.key}: {self.count}"
