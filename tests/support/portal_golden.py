"""What a business with one location saw on each portal page before the portal read through
``accounts.access``: the pages of one fixed business, captured on the code before that change
(``tests/portal/views/golden/<page>.html``, written with ``GOLDEN_WRITE=1``), must be what
the portal shows it now.

The business is made the same way every time (``business_create``, a fixed clock), and what
differs from run to run is replaced before comparing: ids (UUIDs, in order of appearance), the
CSRF token, signed cursors. The one change a single-location owner is meant to see is named
here and nowhere else: the settings tabs gained the Locations and Team pages
(``ADDED_LINES``), which are taken out before comparing.
"""

from __future__ import annotations

import difflib
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from django.test import Client

from accounts.models import User
from reviews.models import Channel, ReviewRequest
from reviews.services import business_create, business_settings_update, message_template_save
from tests.support.oauth import issue_tokens
from tests.support.portal_data import add_request, leave_feedback, send_first

GOLDEN_DIR = Path(__file__).parent.parent / "portal" / "views" / "golden"
WRITE = os.environ.get("GOLDEN_WRITE") == "1"
NOON_IN_NEW_YORK = datetime(2026, 6, 10, 16, 0, tzinfo=UTC)

# Lines a single-location owner's pages gained on purpose (the settings tabs' new pages).
ADDED_LINES = (
    re.compile(r'^\s*<li><a href="/portal/locations/"[^\n]*</li>$'),
    re.compile(r'^\s*<li><a href="/portal/team/"[^\n]*</li>$'),
)

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="[^"]+"')
_CURSOR = re.compile(r"(after|before)=[A-Za-z0-9_\-=%]+")


def single_location_business() -> tuple[User, ReviewRequest]:
    """One business as it normally is: two review sites, its own sender and wording, two
    requests (one sent, with private feedback), one connected app. Call it at
    ``NOON_IN_NEW_YORK`` (``time_machine.move_to(..., tick=False)``)."""
    owner = business_create(
        email="golden-portal@example.com",
        password="a long golden passphrase",
        business_name="Acme Plumbing",
        time_zone="America/New_York",
        review_urls=["https://g.page/r/acme/review", "https://www.trustpilot.com/review/acme"],
    )
    business_settings_update(
        owner=owner,
        changes={"sender_name": "Acme Team", "postal_address": "1 Main St\nSpringfield, IL 62701"},
    )
    message_template_save(
        owner=owner,
        channel=Channel.SMS,
        step=1,
        body="{business_name}: a reminder for {first_name}, {review_link}",
    )
    sent = add_request(owner, first_name="Jane", last_name="Smith", email="jane@example.com")
    send_first(sent, at=NOON_IN_NEW_YORK)
    leave_feedback(sent, at=NOON_IN_NEW_YORK, text="The tap still drips.")
    # An hour earlier: the list's order never depends on the ids' random order.
    add_request(
        owner,
        first_name="Bob",
        mobile_phone_number="+14155552671",
        created_at=NOON_IN_NEW_YORK - timedelta(hours=1),
    )
    issue_tokens(owner, scope="read write")
    return owner, sent


def normalised(html: str) -> str:
    html = _CSRF.sub('name="csrfmiddlewaretoken" value="<csrf>"', html)
    html = _CURSOR.sub(r"\1=<cursor>", html)
    seen: dict[str, str] = {}
    html = _UUID.sub(lambda m: seen.setdefault(m[0], f"<id-{len(seen)}>"), html)
    return html


def without_added_lines(html: str) -> list[str]:
    return [line for line in html.splitlines() if not any(p.match(line) for p in ADDED_LINES)]


def assert_page_unchanged(client: Client, name: str, path: str) -> None:
    """The page at ``path`` is what ``golden/<name>.html`` holds (``GOLDEN_WRITE=1``: write
    it instead)."""
    response = client.get(path)
    assert response.status_code == 200, (path, response.status_code)
    now = normalised(response.content.decode())
    golden = GOLDEN_DIR / f"{name}.html"
    if WRITE:
        GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
        golden.write_text(now)
        return
    before, after = without_added_lines(golden.read_text()), without_added_lines(now)
    assert after == before, "\n".join(
        difflib.unified_diff(before, after, f"golden/{name}.html", path, lineterm="")
    )
