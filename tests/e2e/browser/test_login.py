"""The login page in a real browser: the browser groundwork every page test builds on."""

from __future__ import annotations

import pytest

from tests.factories import UserFactory
from tests.support.browser import expect, log_in

pytestmark = pytest.mark.browser


def test_an_owner_logs_in_and_out_in_a_real_browser(page):
    owner = UserFactory(email="owner@example.com", business_name="Acme Plumbing")
    log_in(page, owner)
    assert page.get_by_text("owner@example.com").first.is_visible()
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_role("link", name="Log in").first).to_be_visible()


def test_a_wrong_password_is_refused_with_a_message(page):
    owner = UserFactory(email="owner@example.com")
    page.goto("/accounts/login/")
    page.get_by_label("E-mail").fill(owner.email)
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_be_visible()
    assert "/accounts/login/" in page.url
