"""What bench-scale measures on its data set: every portal and admin page, and the data shapes
of issue 38 (name fragments of known shares, phones typed three ways, e-mail addresses and a
domain, every status filter, the page reached by following cursors, the API's lists), each
shape a group that ``--shapes`` selects."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import NamedTuple
from urllib.parse import urlencode

from bench.scale.data import LOCATIONS, MANAGER_LOCATIONS, SAMPLE, email, first_name, last_name

# The shapes, in the order measured: "pages" is every page as issue 26 and 37 measured it,
# "write" the API's write path and a dispatcher claim (bench/scale/run.py), the others issue
# 38's.
SHAPES = ("pages", "names", "phones", "emails", "statuses", "cursors", "api", "write")

# Name fragments and the share of the big account's contacts each finds (``data.share``, at
# 10,000 and at 1,000,000 requests alike within a few hundredths of a per cent; at 50,000
# "a55" finds 0.16 %): two stems' number 270 (Wilson270, Johnson270), the stems that end in
# "a" with a number from 55 (Garcia55, Tanaka550, ...), and one stem of twenty (Garcia).
NAME_FRAGMENTS = (("son270", 0.0001), ("a55", 0.002), ("Garcia", 0.05))
# Cursors followed from the first page of the dashboard to the page that is measured.
FOLLOW = 50
REQUEST_STATUSES = (
    "scheduled",
    "sending",
    "sent",
    "delivered",
    "clicked",
    "completed",
    "failed",
    "cancelled",
    "opted_out",
)
MESSAGE_STATUSES = (
    "planned",
    "pending",
    "queued",
    "sending",
    "sent",
    "delivered",
    "failed",
    "unknown",
    "cancelled",
)
# Statuses the loader leaves no row in (the service's transient ones, and "unknown"): their
# filters are measured all the same, an empty page being a filter's longest walk of an index.
EMPTY_STATUSES = {"sending", "sent", "queued", "unknown"}
API = "/api/zapier"
REQUESTS_ADMIN = "/admin/reviews/reviewrequest/"
MESSAGES_ADMIN = "/admin/reviews/message/"


class Page(NamedTuple):
    """One measured page: its row's name, the kind of target (``run.TARGET_MS``), who asks
    ("owner", "manager", "staff", or "api": the owner's OAuth token) and the URL; ``follow``:
    the URL is a first page whose ``?after=`` cursors are followed that many times, and the
    page they reach is the one timed."""

    name: str
    kind: str
    who: str
    url: str
    follow: int = 0
    shape: str = "pages"


def pages(owner_id: str, size: int, shapes: tuple[str, ...] = SHAPES) -> list[Page]:
    """The pages of ``shapes`` on the measured business's data (b = 0). ``{sql}`` in a URL is
    replaced by the value of that SQL expression (an id derived like the loader's),
    ``{oldest}`` by the oldest page's cursor and ``{since:N}`` by the time N days ago
    (``resolve``)."""
    g = min(SAMPLE, size // 3)
    measured: list[Page] = []
    for shape, build in (
        ("pages", _pages),
        ("names", _names),
        ("phones", _phones),
        ("emails", _emails),
        ("statuses", _statuses),
        ("cursors", _cursors),
        ("api", _api),
    ):
        if shape in shapes:
            measured += [page._replace(shape=shape) for page in build(owner_id, g)]
    return measured


def _query(path: str, **params: str) -> str:
    return f"{path}?{urlencode(params)}"


def _pages(owner_id: str, g: int) -> list[Page]:
    """Every portal page twice: for the owner, and for the manager with two locations
    (``MANAGER_EMAIL``: their searches and detail look for a contact at one of theirs); the
    admin's dashboard and lists, filtered by account and location."""
    mine = g + (MANAGER_LOCATIONS[0] - g) % LOCATIONS  # a request at the manager's location
    default = (
        f"(SELECT id FROM accounts_location WHERE account_id = '{owner_id}' "
        "ORDER BY position, created_at LIMIT 1)"
    )
    location = f"md5('l0-{LOCATIONS // 4}')::uuid"  # one of the 19 that are not the default
    owner_filter = f"owner={owner_id}"
    portal = []
    for who, n, suffix in (("owner", g, ""), ("manager", mine, " (manager, 2 locations)")):
        name = f"{first_name(n)} {last_name(n)}"
        portal += [
            Page(f"portal dashboard, first page{suffix}", "portal", who, "/"),
            Page(f"portal dashboard, oldest page{suffix}", "portal", who, "/?after={oldest}"),
            Page(f"portal dashboard, all time{suffix}", "portal", who, "/?period=all"),
            Page(f"portal search, e-mail{suffix}", "portal", who, f"/?q={email(n).upper()}"),
            Page(f"portal search, phone{suffix}", "portal", who, f"/?q=(415) {2000000 + n:07d}"),
            Page(f"portal search, name{suffix}", "portal", who, f"/?q={name}"),
            Page(
                f"portal request detail{suffix}",
                "portal",
                who,
                f"/portal/requests/{{{_request(n)}}}/",
            ),
        ]
    requests, messages = REQUESTS_ADMIN, MESSAGES_ADMIN
    return [
        *portal,
        Page("admin dashboard", "admin dashboard", "staff", f"{requests}dashboard/"),
        Page("admin review requests", "admin list", "staff", requests),
        Page("admin review requests, search", "admin list", "staff", f"{requests}?q={email(g)}"),
        Page(
            "admin review requests, owner filter",
            "admin list",
            "staff",
            f"{requests}?{owner_filter}",
        ),
        Page(
            "admin review requests, location filter",
            "admin list",
            "staff",
            f"{requests}?{owner_filter}&location={{{location}}}",
        ),
        Page(
            "admin review requests, default location filter",
            "admin list",
            "staff",
            f"{requests}?{owner_filter}&location={{{default}}}",
        ),
        Page(
            "admin review requests, waiting for a site",
            "admin list",
            "staff",
            f"{requests}?{owner_filter}&waiting=site",
        ),
        Page("admin messages", "admin list", "staff", messages),
        Page("admin messages, search", "admin list", "staff", f"{messages}?q={email(g)}"),
        Page("admin messages, filter", "admin list", "staff", f"{messages}?status__exact=failed"),
        Page(
            "admin messages, location filter",
            "admin list",
            "staff",
            f"{messages}?{owner_filter}&location={{{location}}}",
        ),
        Page(
            "admin contacts, location filter",
            "admin list",
            "staff",
            f"/admin/reviews/contact/?{owner_filter}&location={{{location}}}",
        ),
        Page(
            "admin clicks, location filter",
            "admin list",
            "staff",
            f"/admin/reviews/click/?{owner_filter}&location={{{location}}}",
        ),
        # The default location's rows are its own and those with no location: two ranges.
        *(
            Page(
                f"admin {name}, default location filter",
                "admin list",
                "staff",
                f"/admin/reviews/{model}/?{owner_filter}&location={{{default}}}",
            )
            for name, model in (
                ("messages", "message"),
                ("contacts", "contact"),
                ("clicks", "click"),
            )
        ),
    ]


def _searched(label: str, text: str) -> list[Page]:
    """One search in the portal (the owner's) and in the admin's requests and messages."""
    return [
        Page(f"portal search, {label}", "portal", "owner", _query("/", q=text)),
        Page(
            f"admin review requests, search {label}",
            "admin list",
            "staff",
            _query(REQUESTS_ADMIN, q=text),
        ),
        Page(
            f"admin messages, search {label}", "admin list", "staff", _query(MESSAGES_ADMIN, q=text)
        ),
    ]


def _names(owner_id: str, g: int) -> list[Page]:
    searched = []
    for word, share in NAME_FRAGMENTS:
        searched += _searched(f"name '{word}' (~{share * 100:g} %)", word)
    return searched


def _phones(owner_id: str, g: int) -> list[Page]:
    """The sample contact's number typed as a person would: national (read with the owner's
    region in the portal; by its digits in the admin, which has none), international, E.164."""
    digits = f"{2000000 + g:07d}"
    national = f"(415) {digits[:3]}-{digits[3:]}"
    international = f"+1 415-{digits[:3]}-{digits[3:]}"
    e164 = f"+1415{digits}"
    return [
        *_searched("phone national (415) 555-0123", national),
        *_searched("phone international +1 415-555-0123", international),
        *_searched("phone E.164 +14155550123", e164),
    ]


def _emails(owner_id: str, g: int) -> list[Page]:
    """The sample contact's whole address, and the domain every contact has (100 %)."""
    return [
        *_searched("e-mail whole address", email(g)),
        *_searched("e-mail domain @example.com (100 %)", "@example.com"),
    ]


def _statuses(owner_id: str, g: int) -> list[Page]:
    """Every status of the portal's filter (the owner's requests) and of the admin's request
    and message lists (every account's)."""

    def note(status: str) -> str:
        return " (no rows)" if status in EMPTY_STATUSES else ""

    return [
        *(
            Page(f"portal dashboard, status {s}{note(s)}", "portal", "owner", f"/?status={s}")
            for s in REQUEST_STATUSES
        ),
        *(
            Page(
                f"admin review requests, status {s}{note(s)}",
                "admin list",
                "staff",
                f"{REQUESTS_ADMIN}?status__exact={s}",
            )
            for s in REQUEST_STATUSES
        ),
        *(
            Page(
                f"admin messages, status {s}{note(s)}",
                "admin list",
                "staff",
                f"{MESSAGES_ADMIN}?status__exact={s}",
            )
            for s in MESSAGE_STATUSES
        ),
    ]


def _cursors(owner_id: str, g: int) -> list[Page]:
    return [
        Page(
            f"portal dashboard, page reached through {FOLLOW} ?after= cursors",
            "portal",
            "owner",
            "/",
            follow=FOLLOW,
        )
    ]


def _api(owner_id: str, g: int) -> list[Page]:
    """The lists an automation platform polls, with the owner's token (scope read write)."""
    listed = f"{API}/review-requests"
    contacts = f"{API}/contacts"
    digits = f"{2000000 + g:07d}"
    return [
        Page("api review requests", "api list", "api", listed),
        Page(
            "api review requests, since 30 days", "api list", "api", f"{listed}?since={{since:30}}"
        ),
        Page("api review requests, status failed", "api list", "api", f"{listed}?status=failed"),
        Page(
            "api review requests, status opted_out since 90 days",
            "api list",
            "api",
            f"{listed}?status=opted_out&since={{since:90}}",
        ),
        Page("api contacts, e-mail", "api list", "api", _query(contacts, email=email(g))),
        Page(
            "api contacts, phone national",
            "api list",
            "api",
            _query(contacts, phone=f"(415) {digits[:3]}-{digits[3:]}"),
        ),
        Page(
            "api contacts, phone E.164", "api list", "api", _query(contacts, phone=f"+1415{digits}")
        ),
    ]


def _request(g: int) -> str:
    return f"md5('r0-{g}')::uuid"


def resolve(url: str, owner_id: str) -> str:
    """``{oldest}`` in a URL: the cursor of the business's oldest page (``?after=`` it shows
    the oldest requests); ``{since:N}``: the time N days ago, in ISO 8601 UTC; ``{sql}``: the
    value of that SQL expression (an id derived like the loader's)."""
    if "{oldest}" in url:
        from core.pagination import encode_cursor
        from portal.views.requests import PAGE_SIZE
        from reviews.models import ReviewRequest

        owned = ReviewRequest.objects.filter(owner_id=uuid.UUID(owner_id))
        oldest = owned.order_by("created_at", "id")
        return url.replace("{oldest}", encode_cursor(oldest[PAGE_SIZE]))

    def ago(match: re.Match[str]) -> str:
        at = datetime.now(UTC) - timedelta(days=int(match[1]))
        return f"{at:%Y-%m-%dT%H:%M:%SZ}"

    url = re.sub(r"\{since:(\d+)\}", ago, url)
    if "{" not in url:
        return url
    from django.db import connection

    head, rest = url.split("{", 1)
    expression, tail = rest.split("}", 1)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT ({expression})::text")
        return head + cursor.fetchone()[0] + tail
