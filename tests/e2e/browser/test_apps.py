"""Connected apps in a real browser: disconnecting an app kills its token at once."""

from __future__ import annotations

import pytest
import requests

from tests.factories import UserFactory
from tests.support.browser import log_in_and_wait, screenshot
from tests.support.oauth import issue_tokens

pytestmark = pytest.mark.browser


def me(live_server, token: str) -> requests.Response:
    return requests.get(
        f"{live_server.url}/api/zapier/me",
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )


def test_an_owner_disconnects_an_app_and_its_token_dies(page, live_server):
    owner = UserFactory(email="owner@acme-plumbing.example", business_name="Acme Plumbing")
    access, _refresh = issue_tokens(owner, scope="read write")
    assert me(live_server, access).status_code == 200  # also records "last used"

    log_in_and_wait(page, owner, next_url="/portal/apps/")
    card = page.locator("section.card", has=page.get_by_role("heading", name="Zapier"))
    assert card.get_by_text("Add contacts and send them review requests").is_visible()
    assert "Not yet" not in card.inner_text()  # last used: just now
    screenshot(page, "owner-apps")

    card.get_by_role("link", name="Disconnect Zapier").click()
    page.get_by_role("heading", name="Disconnect Zapier?").wait_for()
    page.get_by_role("button", name="Disconnect Zapier").click()
    page.get_by_text("Disconnected Zapier").wait_for()
    assert page.get_by_text("No app is connected to your account.").is_visible()

    answer = me(live_server, access)
    assert answer.status_code == 401
    assert answer.json()["error"] == "unauthorized"
