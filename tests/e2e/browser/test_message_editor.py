"""The message editor in a real browser: change the wording, see the preview, save it."""

from __future__ import annotations

import pytest

from reviews.models import MessageTemplate
from tests.factories import UserFactory
from tests.support.browser import (
    collect_errors,
    expect,
    horizontal_overflow,
    log_in_and_wait,
    screenshot,
)

pytestmark = pytest.mark.browser


SMS_EDITOR = "/portal/settings/messages/sms/0/"
NEW_WORDING = "Hi {first_name}! Thanks for choosing {business_name}. A quick review? {review_link}"


@pytest.fixture
def owner(transactional_db):
    return UserFactory(email="owner@acme-plumbing.example", business_name="Acme Plumbing")


def test_an_owner_changes_a_template_and_sees_the_preview_without_javascript(no_js_page, owner):
    page = no_js_page
    log_in_and_wait(page, owner, next_url="/portal/settings/messages/")
    page.get_by_role("link", name="Edit the SMS of first message").click()
    preview = page.get_by_test_id("sms-preview")
    expect(preview).to_contain_text("thanks for choosing Acme Plumbing!")  # the default

    page.get_by_role("textbox", name="Message", exact=True).fill(NEW_WORDING)
    page.get_by_role("button", name="Preview").click()
    expect(preview).to_contain_text("A quick review?")  # the new wording, once it has loaded
    text = preview.inner_text()
    assert text.startswith("Hi Jane! Thanks for choosing Acme Plumbing. A quick review? http")
    assert text.endswith("Reply STOP to opt out")  # added because the wording had none
    assert "1 segment" in page.locator(".segments").inner_text()
    assert not MessageTemplate.objects.exists()  # a preview saves nothing

    page.get_by_role("button", name="Save").click()
    page.get_by_text("Saved.").wait_for()
    saved = MessageTemplate.objects.get(owner=owner, channel="sms", step=0)
    assert saved.body.startswith("Hi {first_name}! Thanks")
    assert "Hi Jane! Thanks" in page.get_by_test_id("sms-preview").inner_text()


def test_the_preview_follows_the_typing_and_counts_segments(page, owner):
    log_in_and_wait(page, owner, next_url=SMS_EDITOR)
    body = page.get_by_role("textbox", name="Message", exact=True)
    body.fill("{business_name}: how did we do, {first_name}? 😊 {review_link}")
    preview = page.get_by_test_id("sms-preview")
    preview.get_by_text("how did we do, Jane? 😊").wait_for()  # no button pressed
    assert "UCS-2" in page.locator(".segments").inner_text()
    screenshot(page, "owner-message-editor")

    body.fill("Hello {first_name}, no link here")
    page.locator("#preview-body .errorlist").get_by_text("Must contain {review_link}.").wait_for()


def test_the_email_preview_shows_the_real_message(page, owner):
    errors = collect_errors(page)
    log_in_and_wait(page, owner, next_url="/portal/settings/messages/email/0/")
    page.get_by_role("textbox", name="Subject", exact=True).fill(
        "A minute for {business_name}, {first_name}?"
    )
    page.get_by_role("textbox", name="Message", exact=True).fill(
        "Hi {first_name},\n\nPlease review us: {review_link}"
    )
    page.get_by_role("button", name="Preview").click()
    expect(
        page.locator(".email-head").get_by_text("A minute for Acme Plumbing, Jane?")
    ).to_be_visible()
    frame = page.frame_locator("iframe.email-preview")
    expect(frame.get_by_text("Please review us:")).to_be_visible()
    expect(frame.get_by_role("link", name="Unsubscribe")).to_be_visible()
    # The message's own inline styles apply inside the sandboxed frame; nothing is blocked.
    background = frame.locator("body").evaluate("body => getComputedStyle(body).backgroundColor")
    assert background == "rgb(246, 247, 249)"
    # Nothing is clipped on the right: the long review link wraps inside the card.
    overflow = frame.locator("html").evaluate("html => html.scrollWidth - html.clientWidth")
    assert overflow <= 0
    link = frame.get_by_role("link", name="http").first
    box, card = link.bounding_box(), page.locator("iframe.email-preview").bounding_box()
    assert box["x"] + box["width"] <= card["x"] + card["width"]
    assert errors == []
    screenshot(page, "owner-email-editor")


def test_the_editor_fits_a_phone_screen(phone_page, owner):
    log_in_and_wait(phone_page, owner, next_url=SMS_EDITOR)
    assert phone_page.get_by_test_id("sms-preview").is_visible()
    assert horizontal_overflow(phone_page) <= 0
