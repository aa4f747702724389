"""Page tests in a real browser: Debian's Chromium driven by Playwright, against live_server.
The fixtures are loaded by tests/conftest.py; page tests are in ``tests/e2e/browser/``, marked
``browser``.

No browser is downloaded: Playwright launches ``/usr/bin/chromium`` (``CHROMIUM`` overrides the
path; `.ci/run` installs Debian's ``chromium`` when it is missing). Without it, these tests skip.
Set ``SCREENSHOTS=1`` (``make screenshots``) to write the pages' screenshots to
``docs/screenshots/``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest

from tests.factories import DEFAULT_PASSWORD

if TYPE_CHECKING:  # imported when a browser test starts, not when the plugin loads
    from playwright.sync_api import ConsoleMessage, Page

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
SCREENSHOT_DIR = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
# Flags for a closed network (no background fetches to Google) and running as root in CI.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def chromium():
    """One Chromium per test module.

    Playwright's sync API keeps an event loop running in this thread while it is started, and
    Django refuses ORM calls from a thread with a running loop; the tests' own ORM calls are
    plain synchronous code, so that check is lifted while (and only while) Playwright runs.
    """
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def page(chromium, live_server, transactional_db):
    """A fresh desktop-sized browser context (cookies, storage) per test."""
    context = chromium.new_context(
        base_url=live_server.url, viewport={"width": 1280, "height": 900}
    )
    context.set_default_timeout(15_000)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def phone_page(chromium, live_server, transactional_db):
    """A phone-sized context (iPhone 13 viewport and touch), for the mobile layout."""
    context = chromium.new_context(
        base_url=live_server.url,
        viewport={"width": 390, "height": 844},
        is_mobile=True,
        has_touch=True,
        device_scale_factor=2,
    )
    context.set_default_timeout(15_000)
    page = context.new_page()
    yield page
    context.close()


# How long an ``expect`` waits for its condition: as long as an action (the contexts' default
# timeout), not Playwright's 5 s: a loaded machine running the suite in parallel is slow.
EXPECT_TIMEOUT_MS = 15_000


def expect(actual, message: str | None = None):
    """Playwright's ``expect``: an assertion that waits (up to ``EXPECT_TIMEOUT_MS``) for its
    condition, for what a click or a keystroke changes. A plain ``assert locator.is_visible()``
    right after a click that navigates or runs a script reads the page before it changed.
    Imported when first used, like the rest of Playwright."""
    from playwright.sync_api import expect as playwright_expect

    playwright_expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    return playwright_expect(actual, message)


def log_in(page, user, *, next_url: str = "/") -> None:
    """Log in through the real login form."""
    page.goto(f"/accounts/login/?next={next_url}")
    page.get_by_label("E-mail").fill(user.email)
    page.get_by_label("Password").fill(DEFAULT_PASSWORD)
    page.get_by_role("button", name="Log in").click()


def log_in_and_wait(page, user, *, next_url: str = "/") -> None:
    """``log_in``, then wait until the browser has arrived at ``next_url`` (a path)."""
    log_in(page, user, next_url=next_url)
    path = next_url.partition("?")[0]
    page.wait_for_url(lambda url: urlsplit(url).path == path)


def screenshot(page, name: str, *, full_page: bool = True) -> None:
    """Save a full-page screenshot to docs/screenshots/<name>.png when SCREENSHOTS=1
    (``full_page=False``: only what the viewport shows, e.g. a phone's first screen)."""
    if os.environ.get("SCREENSHOTS") == "1":
        SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOT_DIR / f"{name}.png"), full_page=full_page)


@pytest.fixture
def no_js_page(chromium, live_server, transactional_db):
    """A desktop context with JavaScript off: every page must work without it."""
    context = chromium.new_context(
        base_url=live_server.url, viewport={"width": 1280, "height": 900}, java_script_enabled=False
    )
    context.set_default_timeout(15_000)
    page = context.new_page()
    yield page
    context.close()


def horizontal_overflow(page) -> int:
    """How many CSS pixels the page is wider than the viewport (0: nothing to scroll sideways)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def unlabelled_controls(page) -> list[str]:
    """Form controls a screen reader could not name: no <label>, no aria-label(ledby)."""
    return page.evaluate(
        """() => [...document.querySelectorAll(
                'input:not([type=hidden]), select, textarea, button')]
            .filter(el => !(el.labels && el.labels.length)
                && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby')
                && !(el.tagName === 'BUTTON' && el.textContent.trim()))
            .map(el => el.outerHTML.slice(0, 120))"""
    )


def collect_errors(page: Page) -> list[str]:
    """Start collecting ``page``'s console errors and uncaught exceptions (a Content Security
    Policy violation or a missing file shows up here); returns the list, filled as it goes."""
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(message.text)

    page.on("console", on_console)
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors
