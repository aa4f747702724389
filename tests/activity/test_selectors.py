"""The reporting selectors (activity.selectors): each series counted on the day it happened, and
(PostgreSQL) plans that read an index range rather than the whole table, from the base tables and
from the rollup."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from activity import selectors
from activity.models import ActivityAccountRollup, ActivityRollup
from activity.services import (
    REOPEN_HOURS,
)
from tests.activity.conftest import hour_start
from tests.factories import UserFactory
from tests.support.scale_data import plan_scans

pytestmark = pytest.mark.django_db


def local_day(moment):
    return timezone.localtime(moment).date()


def test_each_series_counts_on_the_day_it_happened(business, known):
    now, ago = known["now"], known["ago"]
    first_day = local_day(now) - timedelta(days=29)
    counts = selectors.review_request_daily_counts(
        owner_id=business.pk, first_day=first_day, days=30
    )
    days = [first_day + timedelta(days=i) for i in range(30)]

    def on(key):
        return {day: n for day, n in zip(days, counts[key], strict=True) if n}

    expected_scheduled: dict = {}
    for moment, n in ((ago[3], 1), (ago[2], 1), (ago[1], 1), (now, 2)):
        expected_scheduled[local_day(moment)] = expected_scheduled.get(local_day(moment), 0) + n
    assert on("scheduled") == expected_scheduled
    assert on("sent") == {local_day(ago[3] + timedelta(minutes=5)): 1}
    assert on("clicked") == {local_day(ago[2]): 1}
    expected_failed: dict = {local_day(ago[1]): 1}
    expected_failed[local_day(now)] = expected_failed.get(local_day(now), 0) + 2
    assert on("failed") == expected_failed


@pytest.mark.postgres
def test_the_series_and_failure_reasons_read_an_index_range(business, two_years_of_requests):
    since = two_years_of_requests - timedelta(days=30)
    expected = {
        # A range of created_at: one owner's (owner, created_at ...) index, or the admin list's
        # (created_at, id) index when the owner is most of the table.
        "scheduled": ("reviews_request_owner", "reviews_request_recent"),
        "sent": "reviews_request_sent_day",
        "delivered": "reviews_request_delivered_day",
        "clicked": "reviews_request_clicked_day",
        "failed": "reviews_request_failed_day",
        "opted_out": "reviews_request_opted_out_day",
        "reasons": "reviews_message_failed_day",
        "examples": "reviews_message_failed_day",
    }
    for owner_id in (business.pk, None):
        querysets = selectors.review_request_daily_querysets(owner_id=owner_id, since=since)
        querysets["reasons"] = selectors.message_failures_by_code(owner_id=owner_id, since=since)
        querysets["examples"] = selectors.message_newest_failures(
            owner_id=owner_id, since=since, codes=["code-1", "code-2"]
        )
        for key, queryset in querysets.items():
            scans = plan_scans(queryset)
            big = [s for s in scans if s[1] in ("reviews_reviewrequest", "reviews_message")]
            assert not [s for s in big if s[0] == "Seq Scan"], (owner_id, key, scans)
            assert any(index.startswith(expected[key]) for _, _, index in scans), (key, scans)


@pytest.mark.postgres
def test_the_rollup_reads_and_refreshes_read_index_ranges(business):
    owners = [business] + [UserFactory(business_name=f"B{n}") for n in range(20)]
    end = hour_start(timezone.now())
    for model in (ActivityRollup, ActivityAccountRollup):
        model.objects.bulk_create(
            (
                model(owner=owner, hour=end - timedelta(hours=h), metric=metric, count=1)
                for owner in owners
                for h in range(24 * 60)
                for metric in ("scheduled", "sent")
            ),
            batch_size=5000,
        )
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {model._meta.db_table}")
    since = end - timedelta(days=7)
    for owner_id in (business.pk, None):
        rows = selectors.activity_rollup_rows(
            owner_id=owner_id, since=since, until=end, metrics=["sent"]
        )
        scans = plan_scans(rows)
        assert not [s for s in scans if s[0] == "Seq Scan"], (owner_id, scans)
        # The account's sums (no location asked for).
        assert any(index.startswith("activity_account") for _, _, index in scans), scans


@pytest.mark.postgres
def test_the_hourly_rollup_reads_index_ranges(business, two_years_of_requests):
    start = hour_start(two_years_of_requests) - timedelta(hours=REOPEN_HOURS)
    end = hour_start(two_years_of_requests)
    for key, queryset in selectors.activity_hourly_querysets(start=start, end=end).items():
        scans = plan_scans(queryset)
        big = [s for s in scans if s[1] in ("reviews_reviewrequest", "reviews_message")]
        assert not [s for s in big if s[0] == "Seq Scan"], (key, scans)
