"""The owner's dashboard and a request's page in a real browser, on a desktop and a phone."""

from __future__ import annotations

import pytest

from tests.support.browser import (
    collect_errors,
    expect,
    horizontal_overflow,
    log_in_and_wait,
    screenshot,
    unlabelled_controls,
)
from tests.support.portal_data import seeded_owner, seeded_owner_with_locations

pytestmark = pytest.mark.browser


@pytest.fixture
def business(transactional_db):
    return seeded_owner()


def test_an_owner_sees_their_requests_and_funnel_on_the_dashboard(page, business):
    log_in_and_wait(page, business)
    assert page.get_by_role("heading", name="Acme Plumbing").is_visible()
    assert page.get_by_role("link", name="Dashboard").get_attribute("aria-current") == "page"
    table = page.get_by_role("table")
    assert table.get_by_role("row").count() == 11  # header + ten requests
    assert table.get_by_text("Maria Garcia").is_visible()
    funnel = page.locator(".funnel")
    assert funnel.locator("li.added .count").inner_text() == "10"
    assert funnel.locator("li.clicked .count").inner_text() == "4"
    assert "40% of added" in funnel.locator("li.clicked").inner_text()
    assert unlabelled_controls(page) == []
    screenshot(page, "owner-dashboard")


def test_an_owner_filters_and_searches_without_javascript(no_js_page, business):
    page = no_js_page
    log_in_and_wait(page, business)
    page.get_by_label("Status").select_option("clicked")
    page.get_by_role("button", name="Filter").click()
    rows = page.get_by_role("table").locator("tbody tr")
    expect(rows).to_have_count(4)
    page.get_by_label("Search").fill("(415) 555-0103")
    page.get_by_label("Status").select_option("")
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(1)
    expect(rows.first.get_by_text("Aiko Tanaka")).to_be_visible()


def test_a_request_page_shows_its_timeline(page, business):
    log_in_and_wait(page, business)
    page.get_by_role("link", name="Maria Garcia").click()
    expect(page.get_by_role("heading", name="Maria Garcia")).to_be_visible()
    timeline = page.locator("ol.timeline")
    expect(timeline.get_by_text("First message (SMS) sent")).to_be_visible()
    expect(timeline.get_by_text("Clicked through to Google")).to_be_visible()
    expect(timeline.get_by_text("Fast, tidy, and fixed the leak")).to_be_visible()
    screenshot(page, "owner-request")


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/portal/settings/",
        "/portal/settings/sites/",
        "/portal/settings/messages/",
        "/portal/settings/messages/email/0/",
        "/portal/apps/",
    ],
)
def test_portal_pages_fit_a_phone_screen_with_nothing_blocked(phone_page, business, path):
    errors = collect_errors(phone_page)
    log_in_and_wait(phone_page, business, next_url=path)
    assert horizontal_overflow(phone_page) <= 0
    assert errors == []
    assert unlabelled_controls(phone_page) == []
    if path == "/":
        screenshot(phone_page, "owner-dashboard-phone", full_page=False)


def test_a_request_page_fits_a_phone_screen(phone_page, business):
    log_in_and_wait(phone_page, business)
    phone_page.get_by_role("link", name="Maria Garcia").click()
    expect(phone_page.locator("ol.timeline")).to_be_visible()
    assert horizontal_overflow(phone_page) <= 0


def test_the_skip_link_is_the_first_stop_and_visibly_focused(page, business):
    log_in_and_wait(page, business)
    page.keyboard.press("Tab")
    focused = page.evaluate(
        "() => [document.activeElement.textContent.trim(),"
        " getComputedStyle(document.activeElement).outlineStyle]"
    )
    assert focused == ["Skip to main content", "solid"]


@pytest.fixture
def locations_business(transactional_db):
    return seeded_owner_with_locations()


def test_all_locations_names_each_requests_location(page, locations_business):
    log_in_and_wait(page, locations_business)
    table = page.get_by_role("table")
    headers = table.get_by_role("columnheader").all_text_contents()
    assert headers[:2] == ["Contact", "Location"]
    maria = table.get_by_role("row").filter(has_text="Maria Garcia")
    expect(maria.get_by_role("cell").nth(1)).to_have_text("Downtown")
    # A location's name is not broken inside a word to narrow the table.
    lines = page.evaluate(
        """() => [...document.querySelectorAll('td[data-label="Location"]')].map(td => {
            const range = document.createRange();
            range.selectNodeContents(td);
            return range.getClientRects().length;
        })"""
    )
    assert lines == [1] * 10
    assert unlabelled_controls(page) == []
    screenshot(page, "owner-dashboard-locations")
    page.get_by_role("combobox", name="Location").select_option(label="Uptown")
    page.get_by_role("button", name="Show").click()
    expect(table.get_by_role("columnheader", name="Location")).to_have_count(0)
    expect(table.get_by_role("row")).to_have_count(4)  # header + Uptown's three


def test_the_location_column_fits_a_phone(phone_page, locations_business):
    errors = collect_errors(phone_page)
    log_in_and_wait(phone_page, locations_business)
    expect(phone_page.locator('td[data-label="Location"]').first).to_be_visible()
    assert horizontal_overflow(phone_page) <= 0
    assert errors == []
