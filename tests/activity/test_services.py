"""The dashboards' rollup (``ActivityRollup``, activity.services): the rebuild and the beat's
refresh give the same rows, the dashboards read from it give the numbers of the base tables
(nothing counted twice or missed at the boundary between closed hours and the live ones), and a
fixed number of queries."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from accounts.services import location_move
from activity import owner_dashboard, selectors
from activity.dashboard import staff_dashboard
from activity.models import (
    ActivityAccountDailyRollup,
    ActivityAccountRollup,
    ActivityDailyRollup,
    ActivityRollup,
    ActivityRollupState,
)
from activity.services import (
    REBUILD_CHUNK,
    REOPEN_HOURS,
    activity_rollup_pin_default,
    activity_rollup_rebuild,
    activity_rollup_rederive,
    activity_rollup_refresh,
)
from activity.tasks import refresh_activity_rollup
from reviews.models import ReviewRequest
from reviews.services import contact_add, location_requests_move
from tests.activity.conftest import add_at, hour_start, numbers
from tests.factories import ContactFactory
from tests.support.contacts import contact_input
from tests.support.delivery import new_phone
from tests.support.portal_data import add_request, send_first

pytestmark = pytest.mark.django_db


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


# --- Locations ------------------------------------------------------------------------------------


def per_location(owner, metrics=("scheduled", "sent", "failed", "opted_out", "opt_out")) -> dict:
    """``{(location id, metric): count}`` of the owner's hourly rollup rows."""
    totals: dict = {}
    for location_id, metric, n in ActivityRollup.objects.filter(
        owner=owner, metric__in=metrics
    ).values_list("location_id", "metric", "count"):
        totals[location_id, metric] = totals.get((location_id, metric), 0) + n
    return totals


def rows_with_locations(since: datetime | None = None) -> set[tuple]:
    hourly, daily = ActivityRollup.objects.all(), ActivityDailyRollup.objects.all()
    if since is not None:
        hourly, daily = hourly.filter(hour__gte=since), daily.filter(day__gt=since.date())
    fields = ("owner_id", "location_id", "metric", "channel", "detail", "count")
    return set(hourly.values_list("hour", *fields)) | set(daily.values_list("day", *fields))


def test_the_refresh_and_the_rebuild_count_each_location_apart(business, places):
    home, pier = places["home"].pk, places["pier"].pk
    activity_rollup_rebuild(now=places["now"] + timedelta(hours=1))
    assert per_location(business) == {
        # The request with no location stays NULL (the default's), the others are the home's.
        (None, "scheduled"): 1,
        (None, "sent"): 1,
        (home, "scheduled"): 3,
        (home, "sent"): 1,
        (home, "failed"): 1,
        (pier, "scheduled"): 3,
        (pier, "sent"): 1,
        (pier, "failed"): 1,
        (pier, "opted_out"): 1,
        (None, "opt_out"): 1,  # the opt-out event: the business's, no location
    }
    failures = ActivityRollup.objects.filter(owner=business, metric="message_failed")
    assert set(failures.values_list("location_id", "detail", "count")) == {
        (home, "bounced", 1),
        (pier, "spam", 1),
    }
    daily = ActivityDailyRollup.objects.filter(owner=business, location_id=pier, metric="scheduled")
    assert sum(daily.values_list("count", flat=True)) == 3

    # From an empty rollup, the refreshes of the last days write the same rows for their hours.
    ActivityRollup.objects.all().delete()
    ActivityDailyRollup.objects.all().delete()
    ActivityRollupState.objects.all().delete()
    for days in (3, 2, 1, 0):
        activity_rollup_refresh(now=places["now"] + timedelta(hours=1) - timedelta(days=days))
    covered_from = ActivityRollupState.objects.get().covered_from
    assert covered_from < places["now"] - timedelta(days=5)  # every event of the fixture
    # Its hours, and its whole days (the first one holds only the hours it covers).
    ActivityRollup.objects.filter(hour__lt=covered_from).delete()
    ActivityDailyRollup.objects.filter(day__lte=covered_from.date()).delete()
    refreshed = rows_with_locations()
    activity_rollup_rebuild(now=places["now"] + timedelta(hours=1))
    assert rows_with_locations(since=covered_from) == refreshed


def test_hours_marked_to_re_derive_are_re_derived_by_the_refreshes(business, places):
    """What activity's migration 0002 leaves: the hours rolled up without locations (here every
    location's counts under NULL, and a row of a request deleted since) marked to re-derive.
    The dashboards read them from the base tables meanwhile; the refreshes re-derive them,
    ``REBUILD_CHUNK`` of them each, until the rollup covers everything again, as a rebuild
    would."""
    now = places["now"]
    first = hour_start(now) - timedelta(days=40)
    activity_rollup_rebuild(now=now - timedelta(hours=3))
    rebuilt = rows_with_locations()
    closed_until = ActivityRollupState.objects.get().closed_until
    scopes = {"all": None, "home": [places["home"].pk], "pier": [places["pier"].pk]}

    def funnels():
        return {
            key: owner_dashboard.funnel(owner=business, days=None, location_ids=ids)
            for key, ids in scopes.items()
        }

    expected = funnels()
    # The previous release's rows: the same hours, every location's counts together.
    old: dict = {}
    for *key, n in ActivityRollup.objects.values_list(
        "owner_id", "hour", "metric", "channel", "detail", "count"
    ):
        old[tuple(key)] = old.get(tuple(key), 0) + n
    ActivityRollup.objects.all().delete()
    ActivityDailyRollup.objects.all().delete()
    ActivityRollup.objects.bulk_create(
        ActivityRollup(owner_id=o, hour=h, metric=m, channel=c, detail=d, count=n)
        for (o, h, m, c, d), n in old.items()
    )
    ActivityRollup.objects.create(owner=business, hour=first, metric="scheduled", count=5)
    ActivityRollupState.objects.update(backfill_to=first, covered_from=closed_until)

    assert funnels() == expected  # the old hours are not read: the base tables are
    refreshes = 0
    while ActivityRollupState.objects.get().backfill_to is not None:
        activity_rollup_refresh(now=now - timedelta(hours=3))
        refreshes += 1
        assert funnels() == expected
    assert refreshes == -(-(closed_until - first) // REBUILD_CHUNK) == 2
    assert ActivityRollupState.objects.get().covered_from is None  # no event before ``first``
    assert rows_with_locations() == rebuilt


def test_hours_marked_to_re_derive_after_the_first_event_leave_the_older_ones_uncovered(
    business,
):
    """An event older than the marked hours (the rollup never covered it): the re-derivation
    stops at the mark, and the readers keep reading the older hours from the base tables."""
    now = timezone.now()
    add_at(business, None, created_at=now - timedelta(days=20), email="old@example.com")
    activity_rollup_refresh(now=now)
    mark = hour_start(now) - timedelta(days=2)
    ActivityRollupState.objects.update(backfill_to=mark, covered_from=hour_start(now))
    activity_rollup_refresh(now=now)
    state = ActivityRollupState.objects.get()
    assert (state.covered_from, state.backfill_to) == (mark, None)
    assert owner_dashboard.funnel(owner=business, days=30).added == 1


def test_a_new_default_location_leaves_the_rollup_rows_where_their_requests_are(business, places):
    """The rows with no location count the default's requests: when the pier becomes the
    default, reviews pins those requests to the home, and the rollup's rows follow them
    (merged into the home's rows of the same hour), so no number moves."""
    home, pier = places["home"], places["pier"]
    at = hour_start(places["now"]) - timedelta(days=6)
    add_at(business, home, created_at=at, email="twin@example.com")
    unplaced = add_at(business, home, created_at=at, email="unplaced@example.com")
    ReviewRequest.objects.filter(pk=unplaced.pk).update(location=None)
    activity_rollup_rebuild(now=places["now"] - timedelta(hours=3))
    scheduled = ActivityRollup.objects.filter(hour=at, metric="scheduled")
    assert set(scheduled.values_list("location_id", "count")) == {(home.pk, 1), (None, 1)}

    def funnels():
        return [
            owner_dashboard.funnel(owner=business, days=30, location_ids=ids)
            for ids in (None, [home.pk], [pier.pk])
        ]

    before = funnels()
    assert (before[1].added, before[2].added) == (6, 3)
    opt_outs = ActivityRollup.objects.create(
        owner=business, hour=at, metric="opt_out", channel="sms", detail="sms_reply", count=1
    )
    location_move(account=business, location_id=pier.pk, position=0)
    assert funnels() == before
    assert set(scheduled.values_list("location_id", "count")) == {(home.pk, 2)}
    opt_outs.refresh_from_db()
    assert opt_outs.location_id is None  # opt-out events stay the business's
    opt_outs.delete()
    assert activity_rollup_pin_default(account_id=business.pk, location_id=home.pk) == 0
    pinned = rows_with_locations()
    activity_rollup_rebuild(now=places["now"] - timedelta(hours=3))
    assert rows_with_locations() == pinned


def test_requests_moved_to_another_location_are_counted_there_once_the_refreshes_re_derive(
    business, places
):
    """Staff move the pier's requests home: the dashboards read the base tables for the hours
    rolled up so far (so the numbers are right at once), and the next refreshes re-derive those
    hours, after which the rollup holds what a rebuild would."""
    home, pier = places["home"], places["pier"]
    now = places["now"] - timedelta(hours=3)
    activity_rollup_rebuild(now=now)

    def funnels():
        return [
            owner_dashboard.funnel(owner=business, days=30, location_ids=ids)
            for ids in (None, [home.pk], [pier.pk])
        ]

    everything, at_home, at_pier = funnels()
    assert (at_home.added, at_pier.added) == (4, 3)
    assert (
        location_requests_move(
            owner=business, from_location_id=pier.pk, to_location_id=home.pk
        ).moved
        == 3
    )
    moved = funnels()
    assert (moved[0], moved[1].added, moved[2].added) == (everything, 7, 0)

    while ActivityRollupState.objects.get().backfill_to is not None:
        activity_rollup_refresh(now=now)
        assert funnels() == moved
    assert (pier.pk, "scheduled") not in per_location(business)
    derived = rows_with_locations()
    activity_rollup_rebuild(now=now)
    assert rows_with_locations() == derived


def test_re_deriving_an_empty_rollup_marks_nothing(business):
    activity_rollup_rederive()  # never refreshed
    assert not ActivityRollupState.objects.exists()
    activity_rollup_refresh()
    state = ActivityRollupState.objects.get()
    activity_rollup_rederive()  # no hour rolled up
    state.refresh_from_db()
    assert state.backfill_to is None


def summed_over_locations() -> tuple[dict, dict]:
    """The rows per location summed per account: ``({(owner, hour, metric, channel, detail):
    count}, the same per day)``."""
    levels = []
    for model, period in ((ActivityRollup, "hour"), (ActivityDailyRollup, "day")):
        sums: dict = {}
        for *key, n in model.objects.values_list(
            "owner_id", period, "metric", "channel", "detail", "count"
        ):
            sums[tuple(key)] = sums.get(tuple(key), 0) + n
        levels.append(sums)
    return levels[0], levels[1]


def account_sums() -> tuple[dict, dict]:
    return tuple(  # type: ignore[return-value]
        {
            tuple(key): n
            for *key, n in model.objects.values_list(
                "owner_id", period, "metric", "channel", "detail", "count"
            )
        }
        for model, period in ((ActivityAccountRollup, "hour"), (ActivityAccountDailyRollup, "day"))
    )


def test_the_account_sums_follow_the_rows_per_location(business, places):
    """Every way the rollup's rows change (a rebuild, refreshes from empty, re-deriving, a new
    default location) leaves the account's hours and days the sums of its locations' rows."""
    now = places["now"]
    activity_rollup_rebuild(now=now + timedelta(hours=1))
    hours, days = account_sums()
    # Home's and the pier's newest requests, two minutes old: the hour they fall in (in the
    # first two minutes of an hour, the one before ``now``'s).
    assert hours[business.pk, hour_start(places["recent"]), "scheduled", "", ""] == 2
    assert (hours, days) == summed_over_locations()

    for model in (
        ActivityRollup,
        ActivityDailyRollup,
        ActivityAccountRollup,
        ActivityAccountDailyRollup,
        ActivityRollupState,
    ):
        model.objects.all().delete()
    for ago in (3, 2, 1, 0):
        activity_rollup_refresh(now=now + timedelta(hours=1) - timedelta(days=ago))
    assert account_sums() == summed_over_locations()

    activity_rollup_rederive()
    while ActivityRollupState.objects.get().backfill_to is not None:
        activity_rollup_refresh(now=now + timedelta(hours=1))
    assert account_sums() == summed_over_locations()

    before = account_sums()
    location_move(account=business, location_id=places["pier"].pk, position=0)
    assert account_sums() == before == summed_over_locations()
