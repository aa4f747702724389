"""The staff dashboard's numbers (activity.dashboard) and the per-day selectors behind it: the
same numbers on a known data set, a constant number of queries, and (PostgreSQL) plans that
read an index range rather than the whole table."""

from __future__ import annotations

import json
import random
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import F
from django.utils import timezone

from activity import selectors
from activity.dashboard import staff_dashboard
from reviews.models import Contact, Message, ReviewRequest
from reviews.services import contact_add
from tests.factories import ContactFactory, UserFactory
from tests.reviews.conftest import new_phone
from tests.support.contacts import contact_input
from tests.support.portal_data import add_request, click, fail, opt_out, send_first

pytestmark = pytest.mark.django_db


def local_day(moment):
    return timezone.localtime(moment).date()


@pytest.fixture
def known(business):
    """Requests of one business in every state, inside and outside the 30 days."""
    now = timezone.now()
    ago = {n: now - timedelta(days=n) for n in (1, 2, 3, 40)}
    clicked = add_request(business, email="clicked@example.com", created_at=ago[3])
    send_first(clicked, at=ago[3] + timedelta(minutes=5), delivered=True)
    click(clicked, at=ago[2])
    old = add_request(business, email="old@example.com", created_at=ago[1])
    fail(old, at=ago[1], code="bounced", error="Hard bounce: the older one")
    new = add_request(business, email="new@example.com", created_at=now)
    fail(new, at=now, code="bounced", error="Hard bounce: the newest one")
    spam = add_request(business, email="spam@example.com", created_at=now)
    fail(spam, at=now, code="spam", error="Spam complaint")
    ancient = add_request(business, email="ancient@example.com", created_at=ago[40])
    fail(ancient, at=ago[40], code="bounced", error="Outside the period")
    stopped = add_request(business, mobile_phone_number=new_phone(), created_at=ago[2])
    opt_out(stopped, at=ago[1])  # scheduled, then STOP: it was scheduled
    # Opted out before anything was asked: recorded as opted out, never scheduled.
    phone = new_phone()
    ContactFactory(owner=business, email="", phone=phone, sms_opted_out_at=ago[3])
    arrived = contact_add(
        owner=business, data=contact_input(business, {"mobile_phone_number": phone})
    )
    assert arrived.review_request.status == ReviewRequest.Status.OPTED_OUT
    other = UserFactory(business_name="Other Co")
    add_request(other, email="elsewhere@example.com")
    return {"now": now, "ago": ago}


def test_the_numbers_of_a_known_data_set(business, known):
    data = staff_dashboard(owner_id=business.pk)
    series = {s.key: s for s in data.series}
    assert {key: s.total for key, s in series.items()} == {
        "scheduled": 5,
        "sent": 1,
        "delivered": 1,
        "clicked": 1,
        "failed": 3,
    }
    assert data.sent_in_period == 1 and data.click_through_rate == 100.0
    assert data.failure_reasons == [
        ("bounced", "Hard bounce: the newest one", 2),
        ("spam", "Spam complaint", 1),
    ]
    assert data.opt_outs == [("SMS", Contact.OptOutSource.SMS_REPLY.label, 1)]

    everyone = staff_dashboard()
    assert [s.total for s in everyone.series] == [6, 1, 1, 1, 3]
    assert len(everyone.series[0].counts) == 30


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


def test_the_number_of_queries_does_not_grow_with_the_data(
    business, known, django_assert_num_queries
):
    with django_assert_num_queries(5):
        staff_dashboard(owner_id=business.pk)
    for n in range(5):
        request = add_request(business, email=f"more{n}@example.com")
        fail(request, at=timezone.now(), code=f"code-{n}", error=f"Error {n}")
    with django_assert_num_queries(5):
        staff_dashboard(owner_id=business.pk)
    with django_assert_num_queries(5):
        staff_dashboard()


# --- Plans at scale (PostgreSQL) ------------------------------------------------------------------

HISTORY_DAYS = 730
ROWS = 20_000


def plan_scans(queryset) -> list[tuple[str, str, str]]:
    """(node type, table, index) of every scan in the queryset's plan."""
    plan = json.loads(queryset.explain(format="json"))
    scans = []

    def walk(node):
        if "Scan" in node["Node Type"]:
            scans.append(
                (node["Node Type"], node.get("Relation Name", ""), node.get("Index Name", ""))
            )
        for child in node.get("Plans", []):
            walk(child)

    for entry in plan:
        walk(entry["Plan"])
    return scans


@pytest.fixture
def two_years_of_requests(business):
    """``ROWS`` requests of one business spread over two years (a few per cent of them in the
    last 30 days), one message each; a tenth failed, a third clicked. Then ANALYZE."""
    rng = random.Random(26)
    now = timezone.now()
    contacts = Contact.objects.bulk_create(
        Contact(owner=business, email=f"p{i}@example.com", email_normalized=f"p{i}@example.com")
        for i in range(ROWS)
    )
    requests, messages = [], []
    for i, contact in enumerate(contacts):
        at = now - timedelta(days=rng.uniform(0, HISTORY_DAYS))
        failed = i % 10 == 0
        request = ReviewRequest(
            owner=business,
            contact=contact,
            status="failed" if failed else "completed",
            scheduled_for=at,
            sent_at=None if failed else at,
            delivered_at=None if failed else at,
            clicked_at=at if i % 3 == 0 and not failed else None,
            failed_at=at if failed else None,
            ended_at=at,
        )
        requests.append(request)
        messages.append(
            Message(
                review_request=request,
                step=0,
                channel="email",
                status="failed" if failed else "delivered",
                failed_at=at if failed else None,
                last_error_code=f"code-{i % 7}" if failed else "",
                last_error="boom" if failed else "",
            )
        )
    ReviewRequest.objects.bulk_create(requests, batch_size=5000)
    ReviewRequest.objects.update(created_at=F("scheduled_for"))  # not auto_now_add's "now"
    Message.objects.bulk_create(messages, batch_size=5000)
    with connection.cursor() as cursor:
        for model in (Contact, ReviewRequest, Message):
            cursor.execute(f"ANALYZE {model._meta.db_table}")
    return now


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
