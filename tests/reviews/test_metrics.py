"""Delivery metrics (reviews.metrics): the due backlog and the dispatcher's lag at scrape time."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from reviews.models import Message
from tests.support.delivery import email_request, step
from tests.support.metrics import sample


@pytest.mark.django_db
def test_backlog_and_lag_are_read_from_the_due_rows_at_scrape_time(business, client, settings):
    settings.METRICS_TOKEN = "scrape-secret"
    auth = {"HTTP_AUTHORIZATION": "Bearer scrape-secret"}
    empty = client.get("/metrics", **auth).content.decode()
    assert sample(empty, "rr_dispatch_backlog_messages") == 0
    assert sample(empty, "rr_dispatch_lag_seconds") == 0

    oldest, _ = (step(email_request(business), 0) for _ in range(2))
    Message.objects.filter(pk=oldest.pk).update(due_at=timezone.now() - timedelta(seconds=90))
    step(email_request(business, delay_hours=5), 0)  # not due yet: not in the backlog
    text = client.get("/metrics", **auth).content.decode()
    assert sample(text, "rr_dispatch_backlog_messages") == 2
    assert 90 <= sample(text, "rr_dispatch_lag_seconds") < 120
