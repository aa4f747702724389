"""The owner dashboard's chart: requests added, sent, clicked and opted out per day (per week
for long periods), drawn as SVG with its numbers in a table for screen readers."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

import pytest
from django.utils import timezone

from tests.support.portal_data import add_request, click, opt_out, send_first

pytestmark = pytest.mark.django_db

COLUMNS = ["Added", "Sent", "Clicked", "Opted out"]


def table(response) -> dict[date, list[int]]:
    """The chart's accessible table as {first day of the point: [added, sent, ...]}."""
    html = response.content.decode()
    found = re.search(r'data-testid="activity-table">(.*?)</table>', html, re.S)
    assert found, "no activity table"
    body = found[1]
    head = re.findall(r'<th scope="col">([^<]*)</th>', body)
    assert head[1:] == COLUMNS
    rows = {}
    for day, cells in re.findall(r'<time datetime="([\d-]+)">.*?</th>(.*?)</tr>', body, re.S):
        rows[date.fromisoformat(day)] = [int(n) for n in re.findall(r"<td>(\d+)</td>", cells)]
    return rows


@pytest.fixture
def activity(owner):
    """Three days of activity in the owner's own days (noon, far from any midnight)."""
    owner.time_zone = "America/New_York"
    owner.save()
    today = timezone.localdate(timezone=owner.tzinfo)

    def noon(days_ago: int):
        local = datetime.combine(today - timedelta(days=days_ago), datetime.min.time())
        return timezone.make_aware(local.replace(hour=12), owner.tzinfo)

    a = add_request(owner, first_name="A", email="a@example.com", created_at=noon(5))
    b = add_request(owner, first_name="B", email="b@example.com", created_at=noon(5))
    c = add_request(owner, first_name="C", mobile_phone_number="+14155550123", created_at=noon(2))
    send_first(a, at=noon(4))
    send_first(b, at=noon(4))
    send_first(c, at=noon(2))
    click(a, at=noon(1))
    opt_out(c, at=noon(1))
    add_request(owner, first_name="Old", email="old@example.com", created_at=noon(40))
    return today


def test_the_table_holds_each_days_numbers(browser, activity):
    rows = table(browser.get("/", {"period": "7"}))
    today = activity
    assert list(rows) == [today - timedelta(days=i) for i in range(7)]  # newest first
    assert rows[today - timedelta(days=5)] == [2, 0, 0, 0]
    assert rows[today - timedelta(days=4)] == [0, 2, 0, 0]
    assert rows[today - timedelta(days=2)] == [1, 1, 0, 0]
    assert rows[today - timedelta(days=1)] == [0, 0, 1, 1]
    assert sum(sum(counts) for counts in rows.values()) == 8


def test_long_periods_are_drawn_per_week(browser, activity):
    response = browser.get("/", {"period": "90"})
    rows = table(response)
    today = activity
    assert len(rows) == 13
    newest_week = today - timedelta(days=6)
    assert next(iter(rows)) == newest_week  # weeks end today
    assert rows[newest_week] == [3, 3, 1, 1]
    assert [counts[0] for counts in rows.values()] == [3, 0, 0, 0, 0, 1] + [0] * 7
    assert "Activity per week" in response.content.decode()
    assert len(table(browser.get("/", {"period": "all"}))) == 52


def test_the_chart_is_inline_svg_with_a_line_per_series(browser, activity):
    html = browser.get("/", {"period": "7"}).content.decode()
    svg = re.search(r'<svg viewBox="0 0 900 280"[^>]*role="img".*?</svg>', html, re.S)[0]
    assert 'aria-labelledby="activity-title activity-desc-wide"' in svg
    assert re.findall(r'data-series="([^"]+)"', svg) == [
        "scheduled",
        "sent",
        "clicked",
        "opted_out",
    ]
    assert svg.count("<circle") == 4 * 7
    assert "<title>Added: 2 on " in svg
    assert "<script" not in html


def test_another_owners_activity_is_not_counted(browser, activity, other_owner):
    add_request(other_owner, first_name="Z", email="z@example.com")
    rows = table(browser.get("/", {"period": "7"}))
    assert rows[activity] == [0, 0, 0, 0]


@pytest.mark.parametrize("period", ["7", "30", "90", "all"])
def test_the_dashboard_costs_a_fixed_number_of_queries(
    browser, activity, period, django_assert_max_num_queries
):
    with django_assert_max_num_queries(11):
        browser.get("/", {"period": period})
