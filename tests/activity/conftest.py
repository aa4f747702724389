"""Fixtures of the reporting tests, on the business of the delivery tests
(tests/support/delivery.py): requests in every state, events of every kind over the last days for
the rollup, and two years of requests for the query plans."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.utils import timezone

from accounts.models import Location
from reviews.models import Message, ReviewRequest
from reviews.services import contact_add
from tests.factories import ContactFactory, LocationFactory, ReviewSiteFactory, UserFactory
from tests.support import scale_data
from tests.support.contacts import contact_input
from tests.support.delivery import new_phone
from tests.support.portal_data import add_request, click, fail, opt_out, send_first


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


HISTORY_DAYS = 730


ROWS = 20_000


@pytest.fixture
def two_years_of_requests(business):
    """``ROWS`` requests of one business spread over two years (a few per cent of them in the
    last 30 days), one message each; a tenth failed, a third clicked. Then ANALYZE."""
    now = timezone.now()
    scale_data.load_history(business, count=ROWS, days=HISTORY_DAYS, now=now)
    scale_data.analyze()
    return now


def fill_rollup(model, where, *, end, back, metrics, count):
    """Rows of a rollup level (``model``: hourly or daily, per location or per account) in one
    ``INSERT ... SELECT`` (PostgreSQL; the plan tests' years of rows): for each (owner,
    location) of ``where`` (location ``None``: the default's rows from before locations, or the
    account's sums), each of ``metrics`` and each hour (day) ``n`` of ``back`` before ``end``,
    ``count``. Then ANALYZE the table."""
    table = model._meta.db_table
    hourly = any(field.name == "hour" for field in model._meta.fields)
    at = (
        "%(end)s - n * interval '1 hour'"
        if hourly
        else ("((%(end)s - n * interval '1 day') AT TIME ZONE 'UTC')::date")
    )
    per_location = any(field.name == "location" for field in model._meta.fields)
    location = ("location_id, ", "w.location_id, ") if per_location else ("", "")
    sql = f"""
        INSERT INTO {table} (owner_id, {location[0]}{"hour" if hourly else "day"}, metric,
                             channel, detail, count)
        SELECT w.owner_id, {location[1]}{at}, m, '', '', %(count)s
        FROM unnest(%(owners)s::uuid[], %(locations)s::uuid[]) AS w(owner_id, location_id),
             generate_series(%(first)s, %(last)s) AS n, unnest(%(metrics)s::text[]) AS m
    """
    params = {
        "owners": [owner.pk for owner, _ in where],
        "locations": [place.pk if place else None for _, place in where],
        "end": end,
        "first": back.start,
        "last": back.stop - 1,
        "metrics": list(metrics),
        "count": count,
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        cursor.execute(f"ANALYZE {table}")


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


def add_at(owner, location, *, created_at: datetime, **contact) -> ReviewRequest:
    """A review request through ``contact_add`` at ``location`` (``None``: the default),
    backdated to ``created_at``."""
    request = contact_add(
        owner=owner,
        data=contact_input(owner, contact),
        location_id=location.pk if location is not None else None,
    ).review_request
    ReviewRequest.objects.filter(pk=request.pk).update(
        created_at=created_at, scheduled_for=created_at
    )
    Message.objects.filter(review_request=request, step=0).update(due_at=created_at)
    request.refresh_from_db()
    return request


@pytest.fixture
def places(business):
    """The business with a second location (the pier) and events at both over the last days,
    some in the last minutes (live, when the rollup closed its hours before them). At home (the
    default): four requests, one of them with no location (as rows written before locations
    are: the default's), two sent, one clicked, one failed (``bounced``). At the pier: three
    requests, one sent, one failed (``spam``), one opted out (an opt-out event: the
    business's). Another business has a request too."""
    now = timezone.now()
    home = Location.objects.get(account=business, position=0)
    pier = LocationFactory(account=business, name="Pier")
    ReviewSiteFactory(owner=business, location=pier, url="https://g.page/r/pier/review")
    ago = {n: now - timedelta(days=n) for n in (1, 2, 3, 5)}
    recent = now - timedelta(minutes=2)
    at_home = [
        add_at(business, None, created_at=ago[5], email="h0@example.com"),
        add_at(business, home, created_at=ago[3], email="h1@example.com"),
        add_at(business, home, created_at=ago[2], email="h2@example.com"),
        add_at(business, home, created_at=recent, email="h3@example.com"),
    ]
    ReviewRequest.objects.filter(pk=at_home[0].pk).update(location=None)
    send_first(at_home[0], at=ago[5] + timedelta(minutes=5), delivered=True)
    click(at_home[0], at=ago[3])
    send_first(at_home[1], at=ago[3] + timedelta(minutes=5))
    fail(at_home[2], at=ago[2], code="bounced", error="Hard bounce")
    at_pier = [
        add_at(business, pier, created_at=ago[3], email="p0@example.com"),
        add_at(business, pier, created_at=ago[1], email="p1@example.com"),
        add_at(business, pier, created_at=recent, mobile_phone_number=new_phone()),
    ]
    send_first(at_pier[0], at=ago[3] + timedelta(minutes=5), delivered=True)
    fail(at_pier[1], at=ago[1], code="spam", error="Spam complaint")
    opt_out(at_pier[2], at=now - timedelta(minutes=1))
    other = UserFactory(business_name="Other Co")
    add_request(other, email="elsewhere@example.com", created_at=ago[2])
    return {"now": now, "recent": recent, "home": home, "pier": pier}
