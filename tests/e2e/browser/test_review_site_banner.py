"""A business without a review site, in a real browser: the banner says what to do, and the
waiting request is scheduled for sending once a site is added."""

from __future__ import annotations

import pytest

from reviews.models import BusinessSettings, Message
from reviews.services import contact_add
from tests.factories import UserFactory
from tests.support.browser import (
    collect_errors,
    horizontal_overflow,
    log_in_and_wait,
    screenshot,
)
from tests.support.contacts import contact_input

pytestmark = pytest.mark.browser


@pytest.fixture
def siteless(transactional_db):
    owner = UserFactory(email="owner@acme-plumbing.example", business_name="Acme Plumbing")
    BusinessSettings.objects.create(owner=owner)
    return owner


def test_the_banner_leads_to_adding_a_site_and_the_request_then_goes(page, siteless):
    errors = collect_errors(page)
    contact_add(
        owner=siteless,
        data=contact_input(siteless, {"first_name": "Maria", "email": "maria@example.com"}),
    )
    log_in_and_wait(page, siteless)

    banner = page.get_by_role("region", name="Add a review site: your review requests are waiting")
    assert banner.is_visible()
    row = page.get_by_role("row").filter(has_text="Maria")
    assert row.get_by_text("Waiting for a review site").is_visible()
    assert horizontal_overflow(page) <= 0
    screenshot(page, "owner-no-review-site")

    banner.get_by_role("link", name="Add a review site").click()
    page.wait_for_url("**/portal/settings/sites/")
    page.get_by_label("Review link").fill("https://g.page/r/acme-plumbing/review")
    page.get_by_role("button", name="Add site").click()
    page.get_by_text("Added Google.").wait_for()

    page.get_by_role("link", name="Dashboard").click()
    page.get_by_role("heading", name="Acme Plumbing").wait_for()
    assert page.get_by_role("region", name="Add a review site").count() == 0
    assert page.get_by_text("Waiting for a review site").count() == 0
    assert Message.objects.get(step=0).status == Message.Status.PENDING
    assert errors == []


def test_the_banner_fits_a_phone(phone_page, siteless):
    contact_add(
        owner=siteless,
        data=contact_input(siteless, {"first_name": "Maria", "email": "maria@example.com"}),
    )
    log_in_and_wait(phone_page, siteless)
    banner = phone_page.get_by_role("region", name="Add a review site")
    assert banner.is_visible()
    assert horizontal_overflow(phone_page) <= 0
