"""The dashboard: the owner's requests (newest first, paginated, filtered) and the funnel."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from reviews.models import ReviewRequest
from tests.support.portal_data import add_request, send_first

pytestmark = pytest.mark.django_db


def names(response) -> list[str]:
    return [item.contact.display_name for item, _ in response.context["rows"]]


def test_requests_are_listed_newest_first_with_channel_status_and_times(browser, owner):
    now = timezone.now()
    older = add_request(
        owner, first_name="Older", email="older@example.com", created_at=now - timedelta(days=2)
    )
    newer = add_request(
        owner,
        first_name="Newer",
        mobile_phone_number="+14155550123",
        email="newer@example.com",
        created_at=now - timedelta(hours=1),
    )
    send_first(older, at=now - timedelta(days=2))
    response = browser.get("/")
    assert names(response) == ["Newer", "Older"]
    html = response.content.decode()
    assert "SMS, e-mail" in html  # newer: first by SMS, follow-ups by e-mail
    assert ">Sent</span>" in html and ">Scheduled</span>" in html
    assert "+1 415-555-0123" in html
    assert f'href="/portal/requests/{newer.pk}/"' in html


def test_times_are_shown_in_the_owners_time_zone(browser, owner):
    owner.time_zone = "Asia/Tokyo"
    owner.save()
    moment = timezone.now().replace(hour=1, minute=30, second=0, microsecond=0)
    add_request(owner, first_name="Aki", email="aki@example.com", created_at=moment)
    tokyo = timezone.localtime(moment, timezone=owner.tzinfo)
    assert f"{tokyo:%H:%M}" in browser.get("/").content.decode()
    assert f"{tokyo:%H:%M}" != f"{moment:%H:%M}"


def older_link(response) -> str:
    link = re.search(r'<a href="([^"]*)" rel="next">Older', response.content.decode())
    assert link, "no link to older requests"
    return link[1]


def test_the_list_is_paged_25_at_a_time_by_cursor_and_keeps_the_filters(browser, owner):
    now = timezone.now()
    for n in range(30):
        add_request(
            owner,
            first_name=f"Person{n:02d}",
            email=f"p{n}@example.com",
            created_at=now - timedelta(minutes=n),
        )
    first = browser.get("/", {"status": "scheduled"})
    assert len(names(first)) == 25
    assert names(first)[0] == "Person00"
    assert "30 requests match." in first.content.decode()
    link = html.unescape(older_link(first))
    assert link.startswith("?status=scheduled&after=")
    second = browser.get("/" + link)
    assert names(second) == [f"Person{n}" for n in range(25, 30)]
    assert 'rel="next"' not in second.content.decode()
    newer = browser.get("/", {"status": "scheduled", "before": second.context["page"].newer})
    assert names(newer) == names(first)
    # A tampered or stale cursor shows the newest page.
    assert names(browser.get("/", {"after": "nope"})) == names(first)
    assert names(browser.get("/", {"before": "bm9wZQ"})) == names(first)


def test_filter_by_status(browser, owner):
    sent = add_request(owner, first_name="Sent", email="sent@example.com")
    add_request(owner, first_name="Waiting", email="waiting@example.com")
    send_first(sent, at=timezone.now())
    assert names(browser.get("/", {"status": "sent"})) == ["Sent"]
    assert names(browser.get("/", {"status": "scheduled"})) == ["Waiting"]
    assert len(names(browser.get("/", {"status": "not-a-status"}))) == 2  # ignored


@pytest.mark.parametrize(
    ("search", "found"),
    [
        ("garcia", ["Maria Garcia"]),
        ("Maria Garcia", ["Maria Garcia"]),
        ("MARIA.G@", ["Maria Garcia"]),
        ("Plumbing Co", ["Lee Chen"]),
        ("(415) 555-0103", ["Aiko Tanaka"]),
        ("+1 415 555 0103", ["Aiko Tanaka"]),
        ("5550103", ["Aiko Tanaka"]),
        ("020 7946 0958", ["Oliver Smith"]),
        ("555", []),  # too few digits for a phone number: a word, and no name has it
        ("bücher.de", ["Zoë Weber"]),  # the address as typed
        ("xn--bcher", ["Zoë Weber"]),  # the address as mail systems see it
        ("nobody", []),
    ],
)
def test_search_by_name_email_company_or_phone_written_any_way(browser, owner, search, found):
    add_request(owner, first_name="Maria", last_name="Garcia", email="maria.g@example.com")
    add_request(owner, first_name="Aiko", last_name="Tanaka", mobile_phone_number="+14155550103")
    add_request(owner, first_name="Oliver", last_name="Smith", mobile_phone_number="+442079460958")
    add_request(
        owner,
        first_name="Lee",
        last_name="Chen",
        email="lee@example.com",
        company_name="Chen Plumbing Co",
    )
    add_request(owner, first_name="Zoë", last_name="Weber", email="zoe@bücher.de")
    assert names(browser.get("/", {"q": search})) == found


def test_search_says_when_nothing_matches(browser, owner):
    add_request(owner, first_name="Maria", email="maria@example.com")
    html = browser.get("/", {"q": "nobody"}).content.decode()
    assert "No review request matches." in html


def test_funnel_covers_the_chosen_period(browser, owner):
    now = timezone.now()
    add_request(
        owner, first_name="Recent", email="r@example.com", created_at=now - timedelta(days=3)
    )
    add_request(
        owner, first_name="Month", email="m@example.com", created_at=now - timedelta(days=20)
    )
    add_request(
        owner, first_name="Old", email="o@example.com", created_at=now - timedelta(days=200)
    )
    added = {
        period: browser.get("/", {"period": period}).context["funnel"].added
        for period in ("7", "30", "90", "all")
    }
    assert added == {"7": 1, "30": 2, "90": 2, "all": 3}
    default = browser.get("/")
    assert default.context["funnel"].added == 2  # the last 30 days
    assert "Last 30 days" in default.content.decode()


def test_an_empty_funnel_shows_no_percentages(browser):
    response = browser.get("/")
    assert response.context["funnel"].added == 0
    assert all(step.percent is None for step in response.context["funnel"].steps)
    assert "No review requests yet." in response.content.decode()


def test_status_choices_cover_every_request_status(browser):
    choices = dict(browser.get("/").context["form"].fields["status"].choices)
    assert set(ReviewRequest.Status.values) <= set(choices)
