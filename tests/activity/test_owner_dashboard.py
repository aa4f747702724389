"""The owner dashboard's funnel and chart (activity.owner_dashboard): each event counted in the
period it happened, as the staff dashboard counts it, and (PostgreSQL) the all-time funnel's
statements reading index ranges of the rollup."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from activity import owner_dashboard
from activity.dashboard import staff_dashboard
from activity.models import (
    ActivityAccountDailyRollup,
    ActivityAccountRollup,
    ActivityDailyRollup,
    ActivityRollup,
    ActivityRollupState,
)
from activity.owner_dashboard import activity, funnel
from activity.services import (
    activity_rollup_rebuild,
)
from core.times import local_day_start
from reviews.models import ReviewRequest
from reviews.services import contact_add
from tests.activity.conftest import fill_rollup, hour_start
from tests.factories import LocationFactory, ReviewSiteFactory, UserFactory
from tests.support.contacts import contact_input
from tests.support.portal_data import add_request, click, fail, opt_out, send_first
from tests.support.scale_data import plan_nodes

pytestmark = pytest.mark.django_db


def test_funnel_counts_each_stage_reached_with_percentages_of_added(owner, other_owner):
    made = [
        add_request(
            owner,
            first_name=f"P{n}",
            email=f"p{n}@example.com",
            mobile_phone_number=f"+1415555020{n}",
        )
        for n in range(8)
    ]
    now = timezone.now()  # what happened to them, after they were added
    for request in made[:6]:
        send_first(request, at=now, delivered=request in made[:3])
    click(made[0], at=now)  # delivered, then clicked
    click(made[3], at=now)  # clicked without a delivery receipt: it arrived
    opt_out(made[4], at=now)
    fail(made[6], at=now, code="21211", error="Invalid number")
    add_request(other_owner, first_name="Other", email="other@example.com")
    numbers = funnel(owner=owner, days=30)
    assert (numbers.added, numbers.sent, numbers.delivered, numbers.clicked) == (8, 6, 4, 2)
    assert (numbers.failed, numbers.opted_out) == (1, 1)
    assert [step.percent for step in numbers.steps] == [100.0, 75.0, 50.0, 25.0]
    assert [step.percent for step in numbers.outcomes] == [12.5, 12.5]


def test_funnel_counts_each_event_in_the_period_it_happened(owner):
    """As the chart beside it: a request added before the period and clicked in it counts as
    a click of the period, not as a request added in it."""
    now = timezone.now()
    earlier = add_request(
        owner, first_name="Earlier", email="e@example.com", created_at=now - timedelta(days=40)
    )
    send_first(earlier, at=now - timedelta(days=39), delivered=True)
    click(earlier, at=now - timedelta(days=3))
    recent = add_request(
        owner, first_name="Recent", email="r@example.com", created_at=now - timedelta(days=2)
    )
    send_first(recent, at=now - timedelta(days=2))

    def stages(days):
        numbers = funnel(owner=owner, days=days)
        return numbers.added, numbers.sent, numbers.delivered, numbers.clicked

    assert stages(30) == (1, 1, 0, 1)
    assert stages(90) == stages(None) == (2, 2, 1, 1)
    chart = {s.key: sum(s.counts) for s in activity(owner=owner, days=30).series}
    assert (chart["scheduled"], chart["sent"], chart["clicked"]) == (1, 1, 1)


def test_portal_and_admin_count_delivered_alike(owner):
    """A click without a delivery receipt (many e-mail providers send none) proves arrival."""
    now = timezone.now()
    clicked = contact_add(
        owner=owner, data=contact_input(owner, {"email": "a@example.com"})
    ).review_request
    ReviewRequest.objects.filter(pk=clicked.pk).update(
        status="clicked", sent_at=now, clicked_at=now, ended_at=now, ended_reason="clicked"
    )
    receipt = contact_add(
        owner=owner, data=contact_input(owner, {"email": "b@example.com"})
    ).review_request
    ReviewRequest.objects.filter(pk=receipt.pk).update(
        status="delivered", sent_at=now, delivered_at=now
    )
    contact_add(owner=owner, data=contact_input(owner, {"email": "c@example.com"}))  # not sent yet

    portal = funnel(owner=owner, days=30)
    admin = {s.key: s.total for s in staff_dashboard(owner_id=owner.pk).series}
    assert portal.delivered == admin["delivered"] == 2


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
    where = [(o, None) for o in owners]
    fill_rollup(ActivityDailyRollup, where, end=end, back=range(1, 730), metrics=metrics, count=9)
    fill_rollup(ActivityRollup, where, end=end, back=range(1, 24 * 30), metrics=metrics, count=1)
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


# --- By location ----------------------------------------------------------------------------------


def stages(numbers) -> tuple:
    return tuple(getattr(numbers, field) for field in owner_dashboard.FUNNEL_SERIES)


@pytest.mark.parametrize("rolled_up", [False, True])
def test_the_funnel_and_the_chart_of_each_location_add_up_to_the_business(
    business, places, rolled_up
):
    """Per location and over all, from the base tables only, and from the rollup's closed
    hours with the last minutes read live (filtered the same way)."""
    home, pier = places["home"].pk, places["pier"].pk
    if rolled_up:
        activity_rollup_rebuild(now=places["now"] - timedelta(hours=3))
        closed_until = ActivityRollupState.objects.get().closed_until
        assert closed_until == hour_start(places["now"] - timedelta(hours=3))
    for days in (7, 30, None):
        whole = funnel(owner=business, days=days)
        at_home = funnel(owner=business, days=days, location_ids=[home])
        at_pier = funnel(owner=business, days=days, location_ids=[pier])
        # (added, sent, delivered, clicked, failed, opted out)
        assert stages(whole) == (7, 3, 2, 1, 2, 1)
        assert stages(at_home) == (4, 2, 1, 1, 1, 0)
        assert stages(at_pier) == (3, 1, 1, 0, 1, 1)
        assert funnel(owner=business, days=days, location_ids=[home, pier]) == whole
        assert stages(funnel(owner=business, days=days, location_ids=[])) == (0,) * 6

        charts = [
            {s.key: s.counts for s in activity(owner=business, days=days, location_ids=ids).series}
            for ids in (None, [home], [pier])
        ]
        for key, counts in charts[0].items():
            assert counts == [a + b for a, b in zip(charts[1][key], charts[2][key], strict=True)]
        assert sum(charts[2]["opted_out"]) == 1 and sum(charts[1]["opted_out"]) == 0
        assert sum(charts[2]["scheduled"]) == 3 and sum(charts[1]["scheduled"]) == 4


def test_a_location_of_another_business_counts_nothing(business, places):
    elsewhere = LocationFactory(account=UserFactory(business_name="Elsewhere"))
    activity_rollup_rebuild(now=places["now"] - timedelta(hours=3))
    assert stages(funnel(owner=business, days=30, location_ids=[elsewhere.pk])) == (0,) * 6
    chart = activity(owner=business, days=30, location_ids=[elsewhere.pk])
    assert not any(sum(s.counts) for s in chart.series)


def test_a_business_with_one_location_sees_the_same_numbers(business, activity):
    """Its only location, or the whole business: the numbers it saw before locations, with
    requests written before them (no location) and after (the default's id)."""
    made = activity["requests"]
    ReviewRequest.objects.filter(pk__in=[r.pk for r in made[::2]]).update(location=None)
    only = [business.account_locations.get().pk]
    periods = (1, 7, 30, 90, None)
    before = [
        (funnel(owner=business, days=days), owner_dashboard.activity(owner=business, days=days))
        for days in periods
    ]
    assert before[-1][0].added == 12
    for rebuild_at in (activity["now"] - timedelta(hours=3), None):
        activity_rollup_rebuild(now=rebuild_at)
        for ids in (None, only):
            assert [
                (
                    funnel(owner=business, days=days, location_ids=ids),
                    owner_dashboard.activity(owner=business, days=days, location_ids=ids),
                )
                for days in periods
            ] == before


@pytest.mark.postgres
def test_a_locations_all_time_funnel_reads_index_ranges(business):
    """Two years of a business with three locations (rows with no location among the
    default's) and other businesses in both levels of the rollup: the funnel of the default
    location and of another one reads index ranges, never a whole table."""
    two_years_ago = timezone.now() - timedelta(days=730)
    add_request(business, email="first@example.com", created_at=two_years_ago)
    activity_rollup_rebuild()
    home = business.account_locations.get()
    places = [home, *(LocationFactory(account=business) for _ in range(2))]
    owners = [UserFactory(business_name=f"B{n}") for n in range(20)]
    end = ActivityRollupState.objects.get().closed_until
    metrics = ("scheduled", "sent", "delivered", "clicked", "failed", "opted_out")
    mine = [(business, None), *((business, p) for p in places)]
    others = [(o, None) for o in owners]
    fill_rollup(ActivityDailyRollup, mine, end=end, back=range(1, 730), metrics=metrics, count=9)
    # The others' eight years: the business's four places hold ~5 % of the days, as one
    # business among many does (at ~17 %, its default location's own rows ~8 % of the table,
    # reading the table could cost the planner less than the business's index range).
    fill_rollup(
        ActivityDailyRollup, others, end=end, back=range(1, 8 * 365), metrics=metrics, count=9
    )
    # The hours around the whole days: the last ones.
    fill_rollup(ActivityRollup, mine + others, end=end, back=range(1, 48), metrics=metrics, count=1)
    rollup = {ActivityRollup._meta.db_table, ActivityDailyRollup._meta.db_table}
    for chosen in (home, places[1]):
        with CaptureQueriesContext(connection) as queries:
            numbers = owner_dashboard.funnel(owner=business, days=None, location_ids=[chosen.pk])
        assert numbers.sent > 0
        for query in queries.captured_queries:
            if query["sql"].startswith("SET "):
                continue  # the funnel's planner setting (core.db.serial_plans): no read
            with connection.cursor() as cursor:
                cursor.execute(f"EXPLAIN (FORMAT JSON) {query['sql']}")
                (raw,) = cursor.fetchone()
            plan = json.loads(raw) if isinstance(raw, str) else raw
            seq = [
                n["Relation Name"]
                for n, _ in plan_nodes(plan[0]["Plan"])
                if n["Node Type"] == "Seq Scan" and n["Relation Name"] in rollup
            ]
            assert not seq, (chosen.name, query["sql"], plan)


@pytest.mark.postgres
def test_a_locations_funnel_starts_no_parallel_workers(business, django_assert_num_queries):
    """A scope's funnel is a few index ranges of the rollup's rows per location, which
    PostgreSQL costs a heap page each: at a million requests its plan crossed the parallel
    threshold (a ``Gather`` of two workers, ~10 ms for a 1-2 ms read). Here parallel plans are
    made free, so the planner picks one wherever it may: the funnel's statement, planned as it
    runs (in its transaction, with its settings), starts no worker; its numbers stay."""
    add_request(
        business, email="first@example.com", created_at=timezone.now() - timedelta(days=120)
    )
    activity_rollup_rebuild()
    home = business.account_locations.get()
    pier = LocationFactory(account=business)
    end = ActivityRollupState.objects.get().closed_until
    metrics = ("scheduled", "sent", "delivered", "clicked", "failed", "opted_out")
    where = [(business, home), (business, pier), (business, None)]
    fill_rollup(ActivityDailyRollup, where, end=end, back=range(1, 90), metrics=metrics, count=3)
    fill_rollup(ActivityRollup, where, end=end, back=range(1, 48), metrics=metrics, count=1)
    expected = {
        days: owner_dashboard.funnel(owner=business, days=days, location_ids=[pier.pk])
        for days in (30, None)
    }
    plans, statements = [], []

    def explain_first(execute, sql, params, many, context):
        if "reviews_activitydailyrollup" in sql and not many:
            context["cursor"].cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
            (raw,) = context["cursor"].cursor.fetchone()
            plans.append(json.loads(raw) if isinstance(raw, str) else raw)
            statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.cursor() as cursor:
        for setting in ("parallel_setup_cost", "parallel_tuple_cost"):
            cursor.execute(f"SET LOCAL {setting} = 0")
        for setting in ("min_parallel_table_scan_size", "min_parallel_index_scan_size"):
            cursor.execute(f"SET LOCAL {setting} = 0")
    with connection.execute_wrapper(explain_first):
        for days, numbers in expected.items():
            funnel = owner_dashboard.funnel(owner=business, days=days, location_ids=[pier.pk])
            assert funnel == numbers
    assert len(plans) == 2
    for plan in plans:
        nodes = {n["Node Type"] for n, _ in plan_nodes(plan[0]["Plan"])}
        assert not nodes & {"Gather", "Gather Merge"}, plan
    # Parallel plans were on offer: the same statement, planned outside the funnel, takes one;
    # and the funnel put the setting back.
    with connection.cursor() as cursor:
        sql, params = statements[-1]
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        (raw,) = cursor.fetchone()
        plan = json.loads(raw) if isinstance(raw, str) else raw
        assert {n["Node Type"] for n, _ in plan_nodes(plan[0]["Plan"])} & {"Gather"}, plan
    # Its statements: the first request's day, the default location, the rollup's state, the
    # setting, the read, and (inside a transaction already, as here) the setting put back.
    with django_assert_num_queries(6):
        owner_dashboard.funnel(owner=business, days=None, location_ids=[pier.pk])


# --- The chart's weeks from the daily level -------------------------------------------------------


@pytest.fixture
def a_year_of_requests(business):
    """A request every 35 hours or so over the last year (at every hour of the day), at the
    default location (some with no location) and at a second one; some sent, some clicked."""
    now = timezone.now()
    home = business.account_locations.get()
    pier = LocationFactory(account=business, name="Pier")
    ReviewSiteFactory(owner=business, location=pier, url="https://g.page/r/pier/review")
    for n in range(250):
        at = now - timedelta(hours=35 * n + n % 7, minutes=11 * n % 60)
        request = add_request(
            business, email=f"y{n}@example.com", created_at=at, location=(home, pier)[n % 2]
        )
        if n % 3 == 0:
            send_first(request, at=at + timedelta(minutes=5), delivered=n % 2 == 0)
        if n % 9 == 0:
            click(request, at=at + timedelta(hours=2))
    ReviewRequest.objects.filter(location=home, created_at__lt=now - timedelta(days=200)).update(
        location=None
    )
    return {"now": now, "home": home.pk, "pier": pier.pk}


@pytest.mark.parametrize(
    "zone", ["UTC", "America/New_York", "Asia/Tokyo", "Pacific/Chatham", "Asia/Kolkata"]
)
def test_the_weekly_chart_counts_as_the_hours_do(business, a_year_of_requests, zone):
    """The chart's weeks (90 days, all time) read whole UTC days from the daily level and the
    hours around each week's first midnight from the hourly one: the numbers are those of the
    base tables, in zones east and west of UTC, through daylight saving changes, and where
    days are not whole UTC hours (Kolkata, Chatham: the base tables only)."""
    home, pier = a_year_of_requests["home"], a_year_of_requests["pier"]
    scopes = (None, [home], [pier], [home, pier])

    def charts():
        return [
            [(s.key, s.counts) for s in activity(owner=business, days=d, location_ids=ids).series]
            for d in (7, 90, None)
            for ids in scopes
        ]

    with timezone.override(zone):
        live = charts()
        assert sum(sum(counts) for _, counts in live[8]) > 250  # all time, the whole business
        activity_rollup_rebuild(now=a_year_of_requests["now"] - timedelta(hours=3))
        assert charts() == live
        activity_rollup_rebuild()
        assert charts() == live


@pytest.mark.postgres
def test_the_all_time_chart_reads_the_daily_level(business):
    """A year of hours and days of a business with three locations and of 3 others in every
    level: the all-time chart (52 weeks) reads the hourly rows of at most the days a week
    starts inside (53 of them) and the hours after the last whole day, never the year's; the
    whole business's from its sums per account."""
    activity_rollup_rebuild()
    home = business.account_locations.get()
    places = [home, *(LocationFactory(account=business) for _ in range(2))]
    owners = [UserFactory(business_name=f"B{n}") for n in range(3)]
    end = ActivityRollupState.objects.get().closed_until
    metrics = ("scheduled", "sent")
    where = [(business, None), *((business, p) for p in places), *((o, None) for o in owners)]
    a_year = {"end": end, "metrics": metrics}
    fill_rollup(ActivityDailyRollup, where, back=range(1, 370), count=24, **a_year)
    fill_rollup(ActivityRollup, where, back=range(1, 24 * 370), count=1, **a_year)
    # The account's sums: one row per owner, hour (day) and metric.
    for who, n in (([business], len(places) + 1), (owners, 1)):
        sums = [(o, None) for o in who]
        fill_rollup(ActivityAccountDailyRollup, sums, back=range(1, 370), count=24 * n, **a_year)
        fill_rollup(ActivityAccountRollup, sums, back=range(1, 24 * 370), count=n, **a_year)
    hourly = {ActivityRollup._meta.db_table, ActivityAccountRollup._meta.db_table}
    with timezone.override("America/New_York"):
        for ids in (None, [places[1].pk], [home.pk]):
            with CaptureQueriesContext(connection) as queries:
                chart = owner_dashboard.activity(owner=business, days=None, location_ids=ids)
            # Every hour of the 52 weeks counted once, from one level or the other.
            rows = (len(places) + 1) if ids is None else (2 if ids == [home.pk] else 1)
            hours = (end - local_day_start(chart.starts[0])) // timedelta(hours=1)
            assert sum(chart.series[0].counts) == rows * hours
            read = 0
            for query in queries.captured_queries:
                with connection.cursor() as cursor:
                    cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {query['sql']}")
                    (raw,) = cursor.fetchone()
                plan = json.loads(raw) if isinstance(raw, str) else raw
                read += sum(
                    n["Actual Rows"] * n.get("Actual Loops", 1)
                    for n, _ in plan_nodes(plan[0]["Plan"])
                    if n.get("Relation Name") in hourly and "Scan" in n["Node Type"]
                )
            # The 53 days a week starts inside and the last one's hours, not 8,736 hours; the
            # whole business's from its sums, one row an hour.
            assert read <= (1 if ids is None else rows) * len(metrics) * 24 * 55, (ids, read)
