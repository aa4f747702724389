"""The dashboard's activity chart and the Feedback page in a real browser, desktop and phone."""

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
from tests.support.portal_data import seeded_owner

pytestmark = pytest.mark.browser


@pytest.fixture
def business(transactional_db):
    return seeded_owner()


def chart_state(page) -> dict:
    """What is drawn: which chart is shown, its width against the page's, its label size."""
    return page.evaluate(
        """() => {
            const shown = [...document.querySelectorAll('.chart svg[role="img"]')]
                .filter(svg => getComputedStyle(svg).display !== 'none');
            const svg = shown[0];
            const tick = svg.querySelector('text.tick').getBoundingClientRect();
            return {
                shown: shown.map(s => s.dataset.testid),
                width: svg.getBoundingClientRect().width,
                page: document.documentElement.clientWidth,
                label_px: tick.height,
                lines: svg.querySelectorAll('g.series').length,
            };
        }"""
    )


def test_the_dashboard_draws_the_chart_with_its_numbers_in_a_table(page, business):
    errors = collect_errors(page)
    log_in_and_wait(page, business)
    state = chart_state(page)
    assert state["shown"] == ["activity-chart-wide"]
    assert state["lines"] == 4
    assert state["width"] <= state["page"]
    assert state["label_px"] >= 10
    chart = page.get_by_role("img", name="Activity per day")
    assert chart.is_visible()
    page.get_by_text("The numbers", exact=True).click()
    numbers = page.get_by_role("table", name="Review requests per day, newest first")
    expect(numbers).to_be_visible()
    expect(numbers.locator("tbody tr")).to_have_count(30)
    added = numbers.locator("tbody td:nth-of-type(1)").all_inner_texts()
    assert sum(int(n) for n in added) == 10  # the ten requests of the seeded fortnight
    page.get_by_role("link", name="Last 90 days").click()
    expect(page.get_by_role("img", name="Activity per week")).to_be_visible()
    assert errors == []


def test_on_a_phone_the_compact_chart_fits_and_stays_legible(phone_page, business):
    errors = collect_errors(phone_page)
    log_in_and_wait(phone_page, business)
    state = chart_state(phone_page)
    assert state["shown"] == ["activity-chart-compact"]
    assert state["width"] <= state["page"]
    assert state["label_px"] >= 10
    assert horizontal_overflow(phone_page) <= 0
    assert errors == []
    phone_page.get_by_role("img", name="Activity per day").scroll_into_view_if_needed()
    screenshot(phone_page, "owner-dashboard-chart-phone", full_page=False)


def test_the_feedback_page_lists_private_feedback_with_a_link_to_the_request(page, business):
    log_in_and_wait(page, business)
    page.get_by_role("link", name="Feedback", exact=True).click()
    expect(page.get_by_role("heading", name="Private feedback")).to_be_visible()
    expect(page.get_by_text("Fast, tidy, and fixed the leak first time.")).to_be_visible()
    assert unlabelled_controls(page) == []
    screenshot(page, "owner-feedback")
    page.get_by_role("link", name="Maria Garcia").click()
    expect(page.get_by_role("heading", name="Maria Garcia")).to_be_visible()


def test_the_feedback_page_fits_a_phone(phone_page, business):
    errors = collect_errors(phone_page)
    log_in_and_wait(phone_page, business, next_url="/portal/feedback/")
    assert phone_page.get_by_text("Fast, tidy, and fixed the leak").is_visible()
    assert horizontal_overflow(phone_page) <= 0
    assert errors == []
