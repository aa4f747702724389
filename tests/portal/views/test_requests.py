"""The dashboard and one request's page (portal.views.requests): the owner's requests (newest
first, paginated, filtered), the funnel, the chart of requests added, sent, clicked and opted out
per day (per week for long periods, drawn as SVG with its numbers in a table for screen readers); a
request's contact, messages and timeline, and cancelling it."""

from __future__ import annotations

import html
import re
from datetime import date, datetime, timedelta

import pytest
from django.utils import timezone

from accounts.models import Location
from reviews.models import Click, Message, ReviewRequest, ReviewSite
from reviews.services import (
    review_site_add,
)
from tests.factories import LocationFactory, ReviewSiteFactory, UserFactory
from tests.support.delivery import email_request
from tests.support.portal_data import (
    add_request,
    click,
    fail,
    leave_feedback,
    member_client,
    opt_out,
    query_count,
    send_first,
)
from tests.support.portal_golden import assert_page_unchanged

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


def titles(response) -> list[str]:
    return [event.title for event in response.context["timeline"]]


def test_the_timeline_tells_what_happened_in_order(browser, owner):
    start = timezone.now() - timedelta(days=1)
    ReviewSite.objects.create(owner=owner, url="https://g.page/r/maria/review", label="Google")
    request = add_request(
        owner,
        first_name="Maria",
        email="maria@example.com",
        mobile_phone_number="+14155550101",
        created_at=start,
    )
    send_first(request, at=start + timedelta(seconds=5), delivered=True)
    scanner = Click.objects.create(
        review_request=request,
        url="https://g.page/r/x/review",
        method="GET",
        counted=False,
        ignored_reason="link_scanner",
    )
    Click.objects.filter(pk=scanner.pk).update(created_at=start + timedelta(seconds=30))
    click(request, at=start + timedelta(hours=2))
    leave_feedback(request, at=start + timedelta(hours=3), text="Great job on the boiler.")
    response = browser.get(f"/portal/requests/{request.pk}/")
    assert titles(response) == [
        "Review request created",
        "First message (SMS) sent",
        "First message (SMS) delivered",
        "Link to https://g.page/r/x/review fetched by a machine (not counted)",
        "Clicked through to Google",  # the cause, then its effects at the same instant
        "Follow-up 1 (e-mail) cancelled before it was sent",
        "Follow-up 2 (e-mail) cancelled before it was sent",
        "Request ended: clicked",
        "Private feedback",
    ]
    html = response.content.decode()
    assert "Great job on the boiler." in html
    assert "To +14155550101" in html
    assert "link scanner" in html


def test_failures_show_the_providers_reason_and_opt_outs_their_source(browser, owner):
    now = timezone.now()
    failed = add_request(owner, first_name="Fatima", mobile_phone_number="+14155550106")
    fail(failed, at=now, code="21614", error="Not a mobile number")
    html = browser.get(f"/portal/requests/{failed.pk}/").content.decode()
    assert "21614 Not a mobile number" in html
    assert ">Failed</span>" in html

    stopped = add_request(owner, first_name="Aiko", mobile_phone_number="+14155550103")
    send_first(stopped, at=now)
    opt_out(stopped, at=now + timedelta(minutes=5))
    response = browser.get(f"/portal/requests/{stopped.pk}/")
    assert "Opted out of SMS" in titles(response)
    assert "Replied STOP (or similar) to an SMS" in response.content.decode()


def test_planned_follow_ups_say_when_they_will_go(browser, owner):
    request = add_request(owner, first_name="Noah", email="noah@example.com")
    html = browser.get(f"/portal/requests/{request.pk}/").content.decode()
    assert "3 days after the first message is sent" in html
    assert "7 days after the first message is sent" in html
    assert "Cancel this request" in html


def test_cancel_asks_first_then_stops_every_unsent_message(browser, owner):
    request = add_request(owner, first_name="Emma", email="emma@example.com")
    url = f"/portal/requests/{request.pk}/cancel/"
    confirm = browser.get(url)
    assert b"Cancel the review request to Emma?" in confirm.content
    request.refresh_from_db()
    assert request.status == ReviewRequest.Status.SCHEDULED  # asking changes nothing

    done = browser.post(url, follow=True)
    assert done.redirect_chain == [(f"/portal/requests/{request.pk}/", 302)]
    assert b"will get no more messages" in done.content
    request.refresh_from_db()
    assert request.status == ReviewRequest.Status.CANCELLED
    assert request.ended_detail == "cancelled by the business in the portal"
    statuses = set(request.messages.values_list("status", flat=True))
    assert statuses == {Message.Status.CANCELLED}


def test_cancelling_an_ended_request_changes_nothing(browser, owner):
    request = add_request(owner, first_name="Olivia", email="olivia@example.com")
    send_first(request, at=timezone.now())
    click(request, at=timezone.now())
    response = browser.post(f"/portal/requests/{request.pk}/cancel/", follow=True)
    assert b"had already ended" in response.content
    request.refresh_from_db()
    assert request.status == ReviewRequest.Status.CLICKED
    assert b"Cancel this request" not in response.content


def test_an_unknown_request_id_is_not_found(browser):
    assert browser.get("/portal/requests/00000000-0000-0000-0000-000000000000/").status_code == 404
    assert browser.get("/portal/requests/not-a-uuid/").status_code == 404


def test_the_portal_shows_the_banner_and_the_waiting_request(siteless, client):
    request = email_request(siteless)
    client.force_login(siteless)
    page = client.get("/").content.decode()
    assert "your review requests are waiting" in page
    assert 'href="/portal/settings/sites/"' in page
    assert "Waiting for a review site" in page

    detail = client.get(f"/portal/requests/{request.pk}/").content.decode()
    assert "your review requests are waiting" in detail
    assert Message.WAITING_FOR_REVIEW_SITE_TEXT in detail

    review_site_add(owner=siteless, url="https://g.page/r/acme/review")
    assert "your review requests are waiting" not in client.get("/").content.decode()


def test_a_business_with_one_location_sees_the_pages_it_saw_before(golden):
    client, _, sent = golden
    assert_page_unchanged(client, "dashboard", "/")
    assert_page_unchanged(client, "request", f"/portal/requests/{sent.pk}/")
    assert_page_unchanged(client, "request_cancel", f"/portal/requests/{sent.pk}/cancel/")


# --- Members and locations ------------------------------------------------------------------------


def at_each(owner, locations) -> dict[str, ReviewRequest]:
    """One request at each location, named after it."""
    return {
        location.name: add_request(
            owner,
            first_name=location.name,
            email=f"{location.name.lower()}@example.com",
            location=location,
        )
        for location in locations
    }


def switcher(response) -> list[str]:
    """The switcher's options as shown, or [] when the page shows none."""
    page = response.content.decode()
    if 'data-testid="location-switcher"' not in page:
        return []
    form = page[page.index('data-testid="location-switcher"') :]
    form = form[: form.index("</select>")]
    return re.findall(r"<option [^>]*>([^<]+)</option>", form)


def test_a_manager_sees_and_opens_the_requests_of_their_locations_only(owner, locations, manager):
    made = at_each(owner, locations)
    response = manager.get("/")
    assert response.status_code == 200
    assert names(response) == ["Uptown"]
    assert response.context["request"].access.owner == owner
    assert owner.business_name in response.content.decode()
    assert manager.get(f"/portal/requests/{made['Uptown'].pk}/").status_code == 200
    for other in ("Downtown", "Airport"):
        assert manager.get(f"/portal/requests/{made[other].pk}/").status_code == 404
        assert manager.get(f"/portal/requests/{made[other].pk}/cancel/").status_code == 404
        assert manager.post(f"/portal/requests/{made[other].pk}/cancel/").status_code == 404
        made[other].refresh_from_db()
        assert made[other].is_active


def test_a_manager_of_the_default_location_sees_its_requests_with_no_location(owner, locations):
    unplaced = add_request(owner, first_name="Old", email="old@example.com")
    ReviewRequest.objects.filter(pk=unplaced.pk).update(location=None)  # written before locations
    client = member_client(owner, role="manager", locations=[locations[0]], email="d@example.com")
    assert names(client.get("/")) == ["Old"]


def test_a_manager_cancels_a_request_of_their_location(owner, locations, manager):
    mine = at_each(owner, locations)["Uptown"]
    assert manager.post(f"/portal/requests/{mine.pk}/cancel/").status_code == 302
    mine.refresh_from_db()
    assert mine.status == ReviewRequest.Status.CANCELLED


def test_a_viewer_reads_and_cannot_cancel(owner, locations, viewer):
    mine = at_each(owner, locations)["Uptown"]
    page = viewer.get(f"/portal/requests/{mine.pk}/")
    assert page.status_code == 200
    assert "Cancel this request" not in page.content.decode()
    assert viewer.get(f"/portal/requests/{mine.pk}/cancel/").status_code == 403
    assert viewer.post(f"/portal/requests/{mine.pk}/cancel/").status_code == 403
    mine.refresh_from_db()
    assert mine.is_active


def test_the_owner_chooses_a_location_all_locations_first(browser, owner, locations):
    at_each(owner, locations)
    everything = browser.get("/")
    assert switcher(everything) == ["All locations", "Downtown", "Uptown", "Airport"]
    assert sorted(names(everything)) == ["Airport", "Downtown", "Uptown"]
    uptown = browser.get("/", {"location": str(locations[1].pk)})
    assert names(uptown) == ["Uptown"]
    html = uptown.content.decode()
    assert f'<option value="{locations[1].pk}" selected>Uptown</option>' in html
    assert f'href="/portal/feedback/?location={locations[1].pk}"' in html  # kept in the links
    assert f'name="location" value="{locations[1].pk}"' in html  # and in the filter form


def test_the_choice_is_kept_by_the_filters_and_pages(browser, owner, locations):
    now = timezone.now()
    for n in range(27):
        add_request(
            owner,
            first_name=f"Up{n:02d}",
            email=f"up{n}@example.com",
            location=locations[1],
            created_at=now - timedelta(minutes=n),
        )
    add_request(owner, first_name="Down", email="down@example.com", location=locations[0])
    first = browser.get("/", {"location": str(locations[1].pk), "status": "scheduled"})
    second = browser.get(html.unescape(older_link(first)))
    assert names(second) == ["Up25", "Up26"]


def test_a_member_with_one_location_sees_no_switcher_and_one_with_several_does(
    owner, locations, manager
):
    assert switcher(manager.get("/")) == []
    two = member_client(
        owner, role="viewer", locations=[locations[2], locations[0]], email="two@example.com"
    )
    assert switcher(two.get("/")) == ["All locations", "Downtown", "Airport"]


def test_a_location_the_user_does_not_reach_is_not_found(browser, owner, locations, manager):
    assert manager.get("/", {"location": str(locations[0].pk)}).status_code == 404
    assert manager.get("/", {"location": "not-a-uuid"}).status_code == 404
    other = Location.objects.exclude(account=owner).first() or Location.objects.create(
        account=UserFactory(), name="Elsewhere", time_zone="UTC"
    )
    assert browser.get("/", {"location": str(other.pk)}).status_code == 404


def test_a_request_names_its_location_when_the_account_has_several(browser, owner, locations):
    mine = at_each(owner, locations)["Airport"]
    html = browser.get(f"/portal/requests/{mine.pk}/").content.decode()
    assert "<dt>Location</dt><dd>Airport</dd>" in html


def test_the_dashboard_costs_the_same_queries_with_more_locations_and_members(
    browser, owner, locations, manager
):
    at_each(owner, locations)
    owner_few, manager_few = query_count(browser, "/"), query_count(manager, "/")
    more = [LocationFactory(account=owner, name=f"Extra{n}") for n in range(4)]
    at_each(owner, more)
    for n in range(4):
        member_client(owner, role="viewer", locations=more, email=f"v{n}@example.com")
    assert query_count(browser, "/") == owner_few
    assert query_count(manager, "/") == manager_few
    detail = f"/portal/requests/{ReviewRequest.objects.filter(location=locations[1]).get().pk}/"
    # A member's access is two queries (their account, their locations: access_for).
    assert query_count(manager, detail) <= query_count(browser, detail) + 2


def test_the_funnel_and_chart_count_the_location_chosen_or_the_members_locations(
    browser, owner, locations, manager
):
    at_each(owner, locations)
    add_request(owner, first_name="Up2", email="up2@example.com", location=locations[1])

    def added(client, **params) -> tuple[int, int]:
        """The funnel's requests added, and the chart's first series (added) summed."""
        context = client.get("/", {"period": "7", **params}).context
        return context["funnel"].added, sum(context["activity"].series[0].counts)

    assert added(browser) == (4, 4)  # All locations: the whole account
    assert added(browser, location=str(locations[1].pk)) == (2, 2)
    assert added(browser, location=str(locations[2].pk)) == (1, 1)
    assert added(manager) == (2, 2)  # Uptown, theirs


def test_the_review_site_banner_and_the_waiting_label_follow_each_requests_location(
    browser, owner, locations
):
    """Downtown and Airport list a review site, Uptown none: across all locations the banner
    shows and only Uptown's request says it waits; Downtown's own pages show neither."""
    downtown, uptown, airport = locations
    ReviewSiteFactory(owner=owner, location=airport, url="https://g.page/r/airport/review")
    made = at_each(owner, locations)
    banner = "your review requests are waiting"

    page = browser.get("/").content.decode()
    assert banner in page
    assert page.count("Waiting for a review site") == 1
    assert "Waiting for a review site" in page[page.index("Uptown") :]
    assert banner in browser.get(f"/portal/requests/{made['Uptown'].pk}/").content.decode()
    for calm in ("Downtown", "Airport"):
        detail = browser.get(f"/portal/requests/{made[calm].pk}/").content.decode()
        assert banner not in detail
    assert banner not in browser.get("/", {"location": str(downtown.pk)}).content.decode()

    only_downtown = member_client(
        owner, role="manager", locations=[downtown], email="d@example.com"
    )
    assert banner not in only_downtown.get("/").content.decode()
    at_uptown = member_client(owner, role="viewer", locations=[uptown], email="u@example.com")
    assert banner in at_uptown.get("/").content.decode()


def location_column(response) -> list[tuple[str, str]] | None:
    """The list's (contact, location) pairs as shown, or None when it shows no Location
    column."""
    page = response.content.decode()
    table = page[page.index('<table class="stack">') :]
    table = table[: table.index("</table>")]
    if '<th scope="col">Location</th>' not in table:
        assert 'data-label="Location"' not in table
        return None
    return re.findall(
        r'<a href="/portal/requests/[^"]+/">([^<]+)</a>'
        r'.*?<td data-label="Location"[^>]*>([^<]*)</td>',
        table,
        re.S,
    )


def test_all_locations_names_each_requests_location_in_a_column(browser, owner, locations):
    at_each(owner, locations)
    unplaced = add_request(owner, first_name="Old", email="old@example.com")
    ReviewRequest.objects.filter(pk=unplaced.pk).update(location=None)  # the default's
    shown = location_column(browser.get("/"))
    assert shown is not None
    assert sorted(shown) == [
        ("Airport", "Airport"),
        ("Downtown", "Downtown"),
        ("Old", "Downtown"),
        ("Uptown", "Uptown"),
    ]
    # One location chosen: every row is at it, so no column.
    assert location_column(browser.get("/", {"location": str(locations[2].pk)})) is None


def test_the_location_column_follows_the_locations_the_user_reaches(owner, locations, manager):
    at_each(owner, locations)
    assert location_column(manager.get("/")) is None  # Uptown only: nothing to tell apart
    two = member_client(
        owner, role="viewer", locations=[locations[2], locations[0]], email="two@example.com"
    )
    assert sorted(location_column(two.get("/")) or []) == [
        ("Airport", "Airport"),
        ("Downtown", "Downtown"),
    ]


def test_a_business_with_one_location_has_no_location_column(browser, owner):
    add_request(owner, first_name="Solo", email="solo@example.com")
    assert location_column(browser.get("/")) is None
