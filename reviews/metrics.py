"""Delivery metrics read from the database at each scrape of /metrics (core.metrics).

One query over the partial index of due pending rows (``reviews_message_due_claim``): their count
and the oldest due time. Registered by ``ReviewsConfig.ready``. (Unknown outcomes are counted
as they happen: ``rr_messages_total{outcome="unknown"}``.)
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from .models import Message


class DeliveryBacklogCollector(Collector):
    def collect(self) -> Iterator[GaugeMetricFamily]:
        now = timezone.now()
        due = Message.objects.filter(status=Message.Status.PENDING, due_at__lte=now).aggregate(
            rows=Count("pk"), oldest=Min("due_at")
        )
        yield GaugeMetricFamily(
            "rr_dispatch_backlog_messages",
            "Pending messages whose due time has passed (waiting for the dispatcher).",
            value=due["rows"],
        )
        lag = (now - due["oldest"]).total_seconds() if due["oldest"] else 0.0
        yield GaugeMetricFamily(
            "rr_dispatch_lag_seconds",
            "Now minus the due time of the oldest due pending message (0 when none is due).",
            value=lag,
        )
