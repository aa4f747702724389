"""The dashboards' rollup (``ActivityRollup``): the rebuild command and the beat's refresh give
the same rows, the dashboards read from it give the numbers of the base tables (nothing counted
twice or missed at the boundary between closed hours and the live ones), a fixed number of
queries, and (PostgreSQL) plans that read an index range."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from activity import owner_dashboard, selectors
from activity.dashboard import staff_dashboard
from activity.models import ActivityDailyRollup, ActivityRollup, ActivityRollupState
from activity.services import (
    REOPEN_HOURS,
    activity_rollup_rebuild,
    activity_rollup_refresh,
)
from activity.tasks import refresh_activity_rollup
from reviews.models import ReviewRequest
from reviews.services import contact_add
from tests.activity.test_dashboard import plan_scans, two_years_of_requests  # noqa: F401
from tests.factories import ContactFactory, UserFactory
from tests.reviews.conftest import new_phone
from tests.support.contacts import contact_input
from tests.support.portal_data import add_request, click, fail, opt_out, send_first
from tests.support.scale_data import plan_nodes

pytestmark = pytest.mark.django_db


def hour_start(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def numbers(data) -> tuple:
    return (
        {s.key: s.counts for s in data.series},
        data.sent_in_period,
        data.clicked_in_period,
        data.failure_reasons,
        data.opt_outs,
    )


def rollup_rows(since: datetime | None = None) -> set[tuple]:
    rows = ActivityRollup.objects.all()
    if since is not None:
        rows = rows.filter(hour__gte=since)
    return set(rows.values_list("owner_id", "hour", "metric", "channel", "detail", "count"))


def daily_rows(since: datetime | None = None) -> set[tuple]:
    rows = ActivityDailyRollup.objects.all()
    if since is not None:
        rows = rows.filter(day__gte=since.date())
    return set(rows.values_list("owner_id", "day", "metric", "channel", "detail", "count"))


@pytest.fixture
def activity(business):
    """Events of every kind over the last 20 days, several in one hour, two businesses."""
    now = timezone.now()
    made = []
    for n in range(12):
        at = now - timedelta(days=n * 1.7, minutes=7 * n)
        request = add_request(business, email=f"p{n}@example.com", created_at=at)
        made.append(request)
        if n % 4 == 0:
            fail(request, at=at + timedelta(minutes=3), code=f"code-{n % 3}", error=f"Err {n}")
            continue
        send_first(request, at=at + timedelta(minutes=5), delivered=n % 2 == 0)
        if n % 3 == 0:
            click(request, at=at + timedelta(hours=2))
    stopped = add_request(business, mobile_phone_number=new_phone(), created_at=now)
    opt_out(stopped, at=now)
    other = UserFactory(business_name="Other Co")
    add_request(other, email="elsewhere@example.com", created_at=now - timedelta(days=4))
    return {"now": now, "requests": made}


def test_the_rebuild_gives_the_dashboards_the_numbers_of_the_base_tables(business, activity):
    live = [numbers(staff_dashboard(owner_id=owner)) for owner in (business.pk, None)]
    live_activity = owner_dashboard.activity(owner=business, days=None)
    call_command("rebuild_activity_rollup", stdout=StringIO())
    assert ActivityRollup.objects.exists()
    state = ActivityRollupState.objects.get()
    assert state.covered_from is None and state.closed_until == hour_start(timezone.now())
    since = hour_start(activity["now"]) - timedelta(days=30)
    assert selectors.activity_rollup_boundary(since=since) == state.closed_until
    assert [numbers(staff_dashboard(owner_id=owner)) for owner in (business.pk, None)] == live
    assert owner_dashboard.activity(owner=business, days=None) == live_activity


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Asia/Kolkata"])
def test_the_funnel_from_the_rollup_gives_the_numbers_of_the_base_tables(business, activity, zone):
    """Periods that start on a whole UTC hour or half-way through one (Kolkata's midnight):
    the rollup's hours and the live ranges around them count every event once."""
    with timezone.override(zone):
        periods = (1, 7, 30, None)
        live = [owner_dashboard.funnel(owner=business, days=days) for days in periods]
        assert live[-1].added == 12 and live[2].clicked > 0
        activity_rollup_rebuild(now=activity["now"] - timedelta(hours=3))
        assert ActivityRollupState.objects.get().closed_until < activity["now"]
        assert [owner_dashboard.funnel(owner=business, days=days) for days in periods] == live
        activity_rollup_rebuild()
        assert [owner_dashboard.funnel(owner=business, days=days) for days in periods] == live


def test_the_refreshes_and_the_rebuild_write_the_same_rows(business, activity):
    now = activity["now"]
    # The beat's refreshes, every few hours over the last days, from an empty rollup.
    moments = [*(now - timedelta(days=3, hours=h) for h in range(70, -1, -5)), now]
    for moment in moments:
        activity_rollup_refresh(now=moment)
    refreshed, refreshed_days = rollup_rows(), daily_rows()
    covered_from = ActivityRollupState.objects.get().covered_from
    assert covered_from == hour_start(moments[0]) - timedelta(hours=REOPEN_HOURS)
    activity_rollup_rebuild(now=now)
    assert refreshed == rollup_rows(since=covered_from)
    # The whole days after the first one covered (which holds only its covered hours).
    first_whole_day = (covered_from + timedelta(days=1)).replace(hour=0)
    assert {r for r in refreshed_days if r[1] >= first_whole_day.date()} == daily_rows(
        since=first_whole_day
    )
    assert sum(r[-1] for r in daily_rows()) == sum(r[-1] for r in rollup_rows())
    assert any(hour < covered_from for _, hour, *_ in rollup_rows())  # the backfill


def test_nothing_is_counted_twice_or_missed_at_the_boundary(business):
    """Events on either side of the end of the rollup's closed hours, one written late into a
    closed hour: the dashboards count each once, before and after the next refresh."""
    boundary = hour_start(timezone.now()) - timedelta(hours=5)
    before = add_request(business, email="before@example.com", created_at=boundary)
    send_first(before, at=boundary - timedelta(microseconds=1))
    after = add_request(business, email="after@example.com", created_at=boundary)
    send_first(after, at=boundary)
    activity_rollup_rebuild(now=boundary + timedelta(minutes=30))
    assert ActivityRollupState.objects.get().closed_until == boundary
    data = staff_dashboard(owner_id=business.pk)
    assert data.sent_in_period == 2
    assert sum(next(s for s in data.series if s.key == "scheduled").counts) == 2

    # Written now, stamped in an hour the rollup closed: read live until the next refresh
    # re-reads that hour, then from the rollup, once either way.
    late = add_request(business, email="late@example.com", created_at=boundary)
    send_first(late, at=boundary - timedelta(hours=2))
    assert staff_dashboard(owner_id=business.pk).sent_in_period == 2  # not yet rolled up
    refresh_activity_rollup()
    assert ActivityRollupState.objects.get().closed_until == hour_start(timezone.now())
    assert staff_dashboard(owner_id=business.pk).sent_in_period == 3
    refresh_activity_rollup()  # idempotent
    assert staff_dashboard(owner_id=business.pk).sent_in_period == 3
    sent = ActivityRollup.objects.filter(metric="sent").values_list("count", flat=True)
    assert sorted(sent) == [1, 1, 1]  # three hours, once each


def test_a_zone_of_half_hours_is_read_from_the_base_tables(business, activity):
    activity_rollup_rebuild()
    since = hour_start(activity["now"]) - timedelta(days=30)
    with timezone.override("America/New_York"):
        assert selectors.activity_rollup_boundary(since=since) > since
    with timezone.override("Asia/Kolkata"):
        kolkata_midnight = timezone.make_aware(datetime(2026, 1, 10))  # noqa: DTZ001 (made aware here)
        assert selectors.activity_rollup_boundary(since=kolkata_midnight) == kolkata_midnight
        from_rollup_state = owner_dashboard.activity(owner=business, days=30)
        ActivityRollupState.objects.all().delete()
        assert owner_dashboard.activity(owner=business, days=30) == from_rollup_state


def test_periods_the_rollup_does_not_cover_yet_are_read_from_the_base_tables(business, activity):
    live = numbers(staff_dashboard(owner_id=business.pk))
    activity_rollup_refresh()  # a first refresh: the last REOPEN_HOURS only
    since = activity["now"] - timedelta(days=30)
    assert selectors.activity_rollup_boundary(since=since) == since
    assert numbers(staff_dashboard(owner_id=business.pk)) == live


def test_the_dashboards_cost_a_fixed_number_of_queries_from_the_rollup(
    business, activity, browser_for, django_assert_num_queries, django_assert_max_num_queries
):
    activity_rollup_rebuild()
    # State, rollup, the live series, failure codes, their newest texts, opt-outs.
    with django_assert_num_queries(6):
        staff_dashboard(owner_id=business.pk)
    with django_assert_num_queries(6):
        staff_dashboard()
    owner = browser_for(business)
    for period in ("30", "all"):  # "all" looks up the owner's first request
        with django_assert_max_num_queries(12):
            owner.get("/", {"period": period})


@pytest.fixture
def browser_for(client):
    def log_in(user):
        client.force_login(user)
        return client

    return log_in


# --- Plans at scale (PostgreSQL) ------------------------------------------------------------------


@pytest.mark.postgres
def test_the_rollup_reads_and_refreshes_read_index_ranges(business):
    owners = [business] + [UserFactory(business_name=f"B{n}") for n in range(20)]
    end = hour_start(timezone.now())
    ActivityRollup.objects.bulk_create(
        (
            ActivityRollup(owner=owner, hour=end - timedelta(hours=h), metric=metric, count=1)
            for owner in owners
            for h in range(24 * 60)
            for metric in ("scheduled", "sent")
        ),
        batch_size=5000,
    )
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {ActivityRollup._meta.db_table}")
    since = end - timedelta(days=7)
    for owner_id in (business.pk, None):
        rows = selectors.activity_rollup_rows(
            owner_id=owner_id, since=since, until=end, metrics=["sent"]
        )
        scans = plan_scans(rows)
        assert not [s for s in scans if s[0] == "Seq Scan"], (owner_id, scans)
        assert any(index.startswith("reviews_rollup") for _, _, index in scans), scans


@pytest.mark.postgres
def test_the_all_time_funnel_reads_index_ranges_of_days_and_hours(business):
    """Two years of a busy business and 20 others in both levels of the rollup: the funnel's
    statements read index ranges, never a whole table."""
    two_years_ago = timezone.now() - timedelta(days=730)
    add_request(business, email="first@example.com", created_at=two_years_ago)
    activity_rollup_rebuild()
    owners = [business] + [UserFactory(business_name=f"B{n}") for n in range(20)]
    end = ActivityRollupState.objects.get().closed_until
    metrics = ("scheduled", "sent", "delivered", "clicked", "failed", "opted_out")
    ActivityDailyRollup.objects.bulk_create(
        (
            ActivityDailyRollup(owner=o, day=(end - timedelta(days=d)).date(), metric=m, count=9)
            for o in owners
            for d in range(1, 730)
            for m in metrics
        ),
        batch_size=5000,
    )
    ActivityRollup.objects.bulk_create(
        (
            ActivityRollup(owner=o, hour=end - timedelta(hours=h), metric=m, count=1)
            for o in owners
            for h in range(1, 24 * 30)
            for m in metrics
        ),
        batch_size=5000,
    )
    with connection.cursor() as cursor:
        for model in (ActivityRollup, ActivityDailyRollup):
            cursor.execute(f"ANALYZE {model._meta.db_table}")
    with CaptureQueriesContext(connection) as queries:
        owner_dashboard.funnel(owner=business, days=None)
    rollup = {ActivityRollup._meta.db_table, ActivityDailyRollup._meta.db_table}
    for query in queries.captured_queries:
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (FORMAT JSON) {query['sql']}")
            (raw,) = cursor.fetchone()
        plan = json.loads(raw) if isinstance(raw, str) else raw
        seq = [
            n["Relation Name"]
            for n, _ in plan_nodes(plan[0]["Plan"])
            if n["Node Type"] == "Seq Scan" and n["Relation Name"] in rollup
        ]
        assert not seq, (query["sql"], plan)


@pytest.mark.postgres
def test_the_hourly_rollup_reads_index_ranges(business, two_years_of_requests):  # noqa: F811
    start = hour_start(two_years_of_requests) - timedelta(hours=REOPEN_HOURS)
    end = hour_start(two_years_of_requests)
    for key, queryset in selectors.activity_hourly_querysets(start=start, end=end).items():
        scans = plan_scans(queryset)
        big = [s for s in scans if s[1] in ("reviews_reviewrequest", "reviews_message")]
        assert not [s for s in big if s[0] == "Seq Scan"], (key, scans)


def test_a_request_opted_out_on_arrival_is_not_scheduled_in_the_rollup(business):
    phone = new_phone()
    ContactFactory(owner=business, email="", phone=phone, sms_opted_out_at=timezone.now())
    arrived = contact_add(
        owner=business, data=contact_input(business, {"mobile_phone_number": phone})
    )
    assert arrived.review_request.status == ReviewRequest.Status.OPTED_OUT
    activity_rollup_rebuild(now=timezone.now() + timedelta(hours=2))
    assert ActivityRollup.objects.filter(metric="opted_out").exists()
    assert not ActivityRollup.objects.filter(metric="scheduled").exists()
