"""The staff dashboard in a real browser: reached from the admin's index, its chart drawn, one
business chosen."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from reviews.models import BusinessSettings
from tests.e2e.browser import test_back_office as back_office_pages
from tests.factories import UserFactory
from tests.support.browser import collect_errors, screenshot
from tests.support.portal_data import seed_business

pytestmark = pytest.mark.browser

# The back office's page tests' staff login, business and login step, which this test was
# written with beside them.
staff_user = back_office_pages.staff_user
business = back_office_pages.business
admin_log_in = back_office_pages.admin_log_in


def test_staff_dashboard_renders_its_chart(page, staff_user, business):
    errors = collect_errors(page)
    now = timezone.now()
    seed_business(business, now=now)
    second = UserFactory(email="owner@bright-dental.example", business_name="Bright Dental")
    BusinessSettings.objects.create(owner=second)
    seed_business(second, now=now - timedelta(days=14))

    admin_log_in(page, staff_user, "/admin/")
    page.get_by_role("link", name="Dashboard: requests per day").click()
    chart = page.get_by_test_id("dashboard-chart")
    chart.wait_for()
    assert chart.locator("polyline").count() == 5
    assert chart.locator("circle").count() == 5 * 30
    box = chart.bounding_box()
    assert box["width"] > 600 and box["height"] > 150  # drawn, not collapsed
    assert "click-through" in page.get_by_test_id("ctr").inner_text()
    assert "21614" in page.get_by_test_id("failure-reasons").inner_text()
    assert "Replied STOP" in page.get_by_test_id("opt-outs").inner_text()
    screenshot(page, "admin-dashboard")

    page.get_by_label("Business").select_option(label=str(second))
    page.get_by_role("button", name="Show").click()
    page.get_by_role("heading", name=f"Per day: {second}").wait_for()
    assert "owner=" in page.url
    assert errors == []
