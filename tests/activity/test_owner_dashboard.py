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
from activity.models import ActivityDailyRollup, ActivityRollup, ActivityRollupState
from activity.owner_dashboard import activity, funnel
from activity.services import (
    activity_rollup_rebuild,
)
from reviews.models import ReviewRequest
from reviews.services import contact_add
from tests.factories import UserFactory
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
