"""``make bench-scale``: do the pages stay fast as the data grows? Every page, two sizes, one run.

For each size (default 10,000 and 1,000,000 review requests of one business; ``--quick``:
2,000 and 50,000), in a fresh PostgreSQL database that is dropped afterwards:

1. ``migrate``; the business through ``create_business`` and an access token for the API
   (``bench/trees.py``, as ``make bench``); a staff user;
2. the data, loaded fast through the real schema with ``INSERT ... SELECT generate_series``:
   the business's 20 locations (each with its review site) and 50 members (three locations
   each; the measured manager two), its contacts, one request each spread over two years and
   over its locations (the default's with no location, as rows from before locations), ~3
   messages per request (statuses, timestamps and errors as the service leaves them), clicks
   and opt-out events; 199 small businesses alongside (one location, ``--small-requests``
   requests each); then ``VACUUM ANALYZE`` (what autovacuum does on a live database) and
   ``rebuild_activity_rollup`` (the dashboards' rollup, as after a restore);
3. each page with Django's test ``Client`` (logged in as the owner, the manager with two
   locations, or staff; in-process: the figures are the page's own work, not gunicorn's or the
   network's), ``--repeat`` times after one warm-up: median and
   max ms and the queries it ran. Then the write path (``POST /api/zapier/send-review-request``
   with the token, a new contact each time) and one dispatcher run
   (``messages_dispatch_due`` claiming a batch of due messages).

Each size runs in its own process (``--one``), so each has its own Django on its own database.
Prints a table of pages by size (median / max ms, queries), the ratio big/small of the
medians, and "met" or "MISSED" against the targets of issue 26; writes
``bench/results/<date>-scale.json`` (or ``--out``). Targets are reported, never asserted. How
to read the figures: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import PYTHON, ROOT, Tree, fresh_database, run_manage, service_env
from bench.trees import SEND, describe, seed, setup_harness

RESULTS_DIR = ROOT / "bench" / "results"
SMALL_BUSINESSES = 199
HISTORY_DAYS = 730  # every business's requests are spread over two years
CLAIM = 100  # messages per measured dispatcher claim (the default DISPATCH_BATCH_SIZE)
# The big account's team (issue 37): its locations (the first, its default, from
# create_business) and members (managers and every fifth a viewer, three locations each); the
# first member is the measured manager, with two locations.
LOCATIONS = 20
MEMBERS = 50
MANAGER_EMAIL = "member0@bench.example"

# Targets at the big size (issue 26): median ms per kind of page, and big/small ratio.
TARGET_MS = {"portal": 150.0, "admin list": 300.0, "admin dashboard": 500.0}
TARGET_RATIO = 1.5
DEFAULTS = {"sizes": [10_000, 1_000_000], "small_requests": 200, "repeat": 5}
QUICK = {"sizes": [2_000, 50_000], "small_requests": 20, "repeat": 3}


# --- The data --------------------------------------------------------------------------------

# One row per (business b, request g): b = 0 is the measured business with ``size`` requests,
# b = 1..199 the small ones. Ids are derived from (b, g) so that every table is one statement.
# The measured business's request g is at its location g % LOCATIONS (0, its default: no
# location, as the rows from before locations); the small businesses' have none.
ROWS = """
    SELECT b.n AS b, b.owner_id, g,
           CASE WHEN b.n = 0 AND g %% %(locations)s > 0
                THEN md5('l0-' || (g %% %(locations)s))::uuid END AS location_id,
           md5('c' || b.n || '-' || g)::uuid AS contact_id,
           md5('r' || b.n || '-' || g)::uuid AS request_id,
           now() - make_interval(
               secs => %(history)s * 86400.0 * (1 - g::float8 / b.total) + 7200
           ) AS t,
           g %% 100 AS kind,
           (b.n = 0 AND g > b.total - %(due)s) AS due,
           (ARRAY['Maria','James','Aiko','Olivia','Noah','Fatima','Lucas','Emma','Chen',
                  'Sofia'])[1 + g %% 10] AS first_name,
           (ARRAY['Garcia','Wilson','Tanaka','Brown','Martin','Khan','Dubois','Johnson',
                  'Wei','Rossi','Smith','Nguyen','Lopez','Kim','Patel','Silva','Muller',
                  'Cohen','Ivanova','Okafor'])[1 + (g / 10) %% 20] || (g %% 997) AS last_name
    FROM bench_business b CROSS JOIN LATERAL generate_series(1, b.total) AS g
"""
KIND = {  # g % 100 -> what happened to the request (the newest of b = 0 are due now)
    "completed": "kind < 55",
    "clicked": "kind BETWEEN 55 AND 74",
    "failed": "kind BETWEEN 75 AND 82",
    "opted_out": "kind BETWEEN 83 AND 85",
    "cancelled": "kind BETWEEN 86 AND 88",
    "delivered": "kind >= 89",
}
ERROR_CODES = "ARRAY['bounced','invalid_number','carrier_rejected','spam_complaint','timeout']"

LOAD = [
    # The small businesses (no password: never logged in here), their settings and sites as the
    # big one's.
    """
    INSERT INTO accounts_user (id, password, is_superuser, email, business_name, time_zone,
        default_region, is_staff, is_active, date_joined)
    SELECT md5('u' || n)::uuid, '!', false, 'owner' || n || '@small.bench.example',
        'Small business ' || n, 'America/New_York', 'US', false, true, now()
    FROM generate_series(1, %(small)s) AS n
    """,
    """
    INSERT INTO reviews_businesssettings (owner_id, initial_channel, follow_up_offsets_hours,
        follow_up_other_channel, cooldown_days, send_window_start, send_window_end,
        send_window_applies_to, default_delay_hours, created_at, updated_at, postal_address,
        sender_name, notify_feedback)
    SELECT u.id, s.initial_channel, s.follow_up_offsets_hours, s.follow_up_other_channel,
        s.cooldown_days, s.send_window_start, s.send_window_end, s.send_window_applies_to,
        s.default_delay_hours, s.created_at, s.updated_at, s.postal_address, s.sender_name,
        s.notify_feedback
    FROM accounts_user u, reviews_businesssettings s
    WHERE u.email LIKE '%%@small.bench.example' AND s.owner_id = %(owner)s
    """,
    """
    INSERT INTO reviews_reviewsite (id, kind, label, url, position, created_at, owner_id)
    SELECT md5('s' || u.id)::uuid, 'google', 'Google', 'https://g.page/r/' || u.id || '/review',
        0, now(), u.id
    FROM accounts_user u WHERE u.is_staff = false AND u.account_id IS NULL
    """,
    # Each small business's one location, as the migration gave every business.
    """
    INSERT INTO accounts_location (id, account_id, name, time_zone, position, created_at)
    SELECT md5('l' || u.id)::uuid, u.id, u.business_name, u.time_zone, 0, now()
    FROM accounts_user u WHERE u.email LIKE '%%@small.bench.example'
    """,
    # The measured business's locations (k = 0: its default) and the other ones' review sites.
    """
    CREATE TEMP TABLE bench_location AS
    SELECT 0 AS k, (SELECT id FROM accounts_location WHERE account_id = %(owner)s
                    ORDER BY position, created_at LIMIT 1) AS id
    UNION ALL
    SELECT k, md5('l0-' || k)::uuid FROM generate_series(1, %(locations)s - 1) AS k
    """,
    """
    INSERT INTO accounts_location (id, account_id, name, time_zone, position, created_at)
    SELECT id, %(owner)s, 'Location ' || k, 'America/New_York', k, now()
    FROM bench_location WHERE k > 0
    """,
    """
    INSERT INTO reviews_reviewsite (id, kind, label, url, position, created_at, owner_id,
        location_id)
    SELECT md5('s0-' || k)::uuid, 'google', 'Google', 'https://g.page/r/bench-' || k || '/review',
        0, now(), %(owner)s, id
    FROM bench_location WHERE k > 0
    """,
    # Its members (no password: the measured one logs in without), with their locations.
    """
    INSERT INTO accounts_user (id, password, is_superuser, email, business_name, time_zone,
        default_region, is_staff, is_active, date_joined, account_id, role)
    SELECT md5('m' || n)::uuid, '!', false, 'member' || n || '@bench.example', '',
        'America/New_York', 'US', false, true, now(), %(owner)s,
        CASE WHEN n %% 5 = 4 THEN 'viewer' ELSE 'manager' END
    FROM generate_series(0, %(members)s - 1) AS n
    """,
    """
    INSERT INTO accounts_user_locations (user_id, location_id)
    SELECT DISTINCT md5('m' || n)::uuid, l.id
    FROM generate_series(0, %(members)s - 1) AS n
    CROSS JOIN LATERAL unnest(CASE WHEN n = 0 THEN %(manager_locations)s::int[]
        ELSE ARRAY[n %% %(locations)s, (n + 7) %% %(locations)s, (n + 13) %% %(locations)s]
        END) AS m(k)
    JOIN bench_location l ON l.k = m.k
    """,
    """
    CREATE TEMP TABLE bench_business AS
    SELECT 0 AS n, %(owner)s::uuid AS owner_id, %(size)s AS total
    UNION ALL
    SELECT n, md5('u' || n)::uuid, %(small_requests)s FROM generate_series(1, %(small)s) AS n
    """,
    f"""
    INSERT INTO reviews_contact (id, first_name, last_name, company_name, email,
        email_normalized, phone, metadata, source, sms_opted_out_at, sms_opt_out_source,
        email_opted_out_at, email_opt_out_source, created_at, updated_at, owner_id)
    SELECT contact_id, first_name, last_name, '', lower(first_name || '.' || last_name) || '.'
        || g || '@example.com', lower(first_name || '.' || last_name) || '.' || g
        || '@example.com', '+1415' || (2000000 + g), '{{}}', 'api',
        CASE WHEN {KIND["opted_out"]} AND NOT due THEN t + interval '1 day' END,
        CASE WHEN {KIND["opted_out"]} AND NOT due THEN 'sms_reply' ELSE '' END, NULL, '',
        t, t, owner_id
    FROM ({ROWS}) AS r
    """,
    f"""
    INSERT INTO reviews_reviewrequest (id, status, scheduled_for, token, ended_reason,
        ended_detail, created_at, updated_at, sending_at, sent_at, delivered_at, clicked_at,
        completed_at, failed_at, cancelled_at, opted_out_at, ended_at, contact_id, owner_id,
        location_id)
    SELECT request_id, status, t, md5('t' || b || '-' || g)::varchar(22), reason, '', t, t,
        sent, sent, delivered, clicked, completed, failed, cancelled, opted_out,
        COALESCE(completed, clicked, failed, cancelled, opted_out), contact_id, owner_id,
        location_id
    FROM (
        SELECT r.*,
            CASE WHEN due THEN 'scheduled'
                 WHEN {KIND["completed"]} THEN 'completed'
                 WHEN {KIND["clicked"]} THEN 'clicked'
                 WHEN {KIND["failed"]} THEN 'failed'
                 WHEN {KIND["opted_out"]} THEN 'opted_out'
                 WHEN {KIND["cancelled"]} THEN 'cancelled'
                 ELSE 'delivered' END AS status,
            CASE WHEN due OR {KIND["delivered"]} THEN ''
                 WHEN {KIND["completed"]} THEN 'sequence_finished'
                 WHEN {KIND["clicked"]} THEN 'clicked'
                 WHEN {KIND["failed"]} THEN 'delivery_failed'
                 WHEN {KIND["opted_out"]} THEN 'opted_out'
                 ELSE 'cancelled' END AS reason,
            CASE WHEN NOT due AND NOT ({KIND["failed"]}) AND NOT ({KIND["cancelled"]})
                 THEN t + interval '1 hour' END AS sent,
            CASE WHEN NOT due AND ({KIND["completed"]} OR {KIND["clicked"]}
                 OR {KIND["delivered"]}) THEN t + interval '61 minutes' END AS delivered,
            CASE WHEN NOT due AND {KIND["clicked"]} THEN t + interval '5 hours' END AS clicked,
            CASE WHEN NOT due AND {KIND["completed"]} THEN t + interval '3 days' END
                AS completed,
            CASE WHEN NOT due AND {KIND["failed"]} THEN t + interval '1 hour' END AS failed,
            CASE WHEN NOT due AND {KIND["cancelled"]} THEN t + interval '10 minutes' END
                AS cancelled,
            CASE WHEN NOT due AND {KIND["opted_out"]} THEN t + interval '1 day' END
                AS opted_out
        FROM ({ROWS}) AS r
    ) AS q
    """,
    # Three steps each: SMS first for odd g, e-mail for even, the other channel next.
    f"""
    INSERT INTO reviews_message (id, step, channel, status, planned_offset, due_at,
        to_address, attempts, last_error, last_error_code, provider, provider_message_id,
        created_at, updated_at, queued_at, sending_at, sent_at, delivered_at, failed_at,
        unknown_at, cancelled_at, review_request_id)
    SELECT md5('m' || b || '-' || g || '-' || step)::uuid, step, channel, status,
        make_interval(days => step * 3), due_at,
        CASE WHEN sent IS NULL AND failed IS NULL THEN ''
             WHEN channel = 'sms' THEN '+1415' || (2000000 + g)
             ELSE lower(first_name || '.' || last_name) || '.' || g || '@example.com' END,
        CASE WHEN sent IS NULL AND failed IS NULL THEN 0 ELSE 1 END,
        CASE WHEN failed IS NULL THEN '' ELSE 'The provider refused the message: ' || code END,
        CASE WHEN failed IS NULL THEN '' ELSE code END,
        CASE WHEN sent IS NULL AND failed IS NULL THEN '' WHEN channel = 'sms' THEN 'twilio'
             ELSE 'postmark' END,
        CASE WHEN sent IS NULL THEN '' ELSE 'bench-' || md5(b || '-' || g || '-' || step) END,
        t, t, sent, sent, sent, delivered, failed, NULL, cancelled, request_id
    FROM (
        SELECT r.*, s.step,
            CASE WHEN (g + s.step) %% 2 = 1 THEN 'sms' ELSE 'email' END AS channel,
            ({ERROR_CODES})[1 + g %% 5] AS code,
            CASE WHEN due AND s.step = 0 THEN 'pending'
                 WHEN due THEN 'planned'
                 WHEN {KIND["failed"]} AND s.step = 0 THEN 'failed'
                 WHEN s.step = 0 OR {KIND["completed"]} THEN
                      CASE WHEN {KIND["cancelled"]} THEN 'cancelled' ELSE 'delivered' END
                 WHEN {KIND["delivered"]} THEN 'planned'
                 ELSE 'cancelled' END AS status,
            CASE WHEN due AND s.step = 0 THEN now() - interval '1 minute' END AS due_at,
            CASE WHEN NOT due AND NOT ({KIND["failed"]}) AND NOT ({KIND["cancelled"]})
                 AND (s.step = 0 OR {KIND["completed"]})
                 THEN t + make_interval(days => s.step * 3, hours => 1) END AS sent,
            CASE WHEN NOT due AND NOT ({KIND["failed"]}) AND NOT ({KIND["cancelled"]})
                 AND (s.step = 0 OR {KIND["completed"]})
                 THEN t + make_interval(days => s.step * 3, mins => 61) END AS delivered,
            CASE WHEN NOT due AND {KIND["failed"]} AND s.step = 0
                 THEN t + interval '1 hour' END AS failed,
            CASE WHEN NOT due AND ({KIND["cancelled"]} OR (s.step > 0 AND NOT
                 ({KIND["completed"]}) AND NOT ({KIND["delivered"]})))
                 THEN t + interval '5 hours' END AS cancelled
        FROM ({ROWS}) AS r CROSS JOIN generate_series(0, 2) AS s(step)
    ) AS q
    """,
    f"""
    INSERT INTO reviews_click (url, method, user_agent, ip_hash, counted, ignored_reason,
        created_at, review_request_id, site_id)
    SELECT 'https://g.page/r/' || owner_id || '/review', 'GET',
        'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X)', md5(g::text), true, '',
        t + interval '5 hours', request_id, md5('s' || owner_id)::uuid
    FROM ({ROWS}) AS r WHERE NOT due AND {KIND["clicked"]}
    """,
    f"""
    INSERT INTO reviews_optoutevent (channel, action, source, address, raw_text, external_id,
        created_at, contact_id, owner_id)
    SELECT 'sms', 'opt_out', 'sms_reply', '+1415' || (2000000 + g), 'STOP', '',
        t + interval '1 day', contact_id, owner_id
    FROM ({ROWS}) AS r WHERE NOT due AND {KIND["opted_out"]}
    """,
]


def load(
    *,
    owner_id: str,
    size: int,
    small: int,
    small_requests: int,
    due: int,
    vacuum: bool = True,
    locations: int = LOCATIONS,
    members: int = MEMBERS,
) -> dict:
    """Insert the data set (the newest ``due`` requests of the business due now, its
    ``locations`` and ``members``); returns seconds per step and the row counts.
    ``vacuum=False``: ANALYZE only (in a transaction)."""
    from django.core.management import call_command
    from django.db import connection

    params: dict[str, Any] = {
        "owner": owner_id,
        "size": size,
        "small": small,
        "small_requests": small_requests,
        "history": HISTORY_DAYS,
        "due": due,
        "locations": locations,
        "members": members,
        "manager_locations": list(MANAGER_LOCATIONS),
    }
    timings = {}
    with connection.cursor() as cursor:
        # A bulk load: no JIT compilation of these one-off statements (seconds each), and no
        # WAL flush per statement.
        cursor.execute("SET jit = off")
        cursor.execute("SET synchronous_commit = off")
        for statement in LOAD:
            started = time.perf_counter()
            cursor.execute(statement, params)
            name = " ".join(statement.split()[:3])
            timings[name] = round(time.perf_counter() - started, 1)
        started = time.perf_counter()
        cursor.execute("VACUUM ANALYZE" if vacuum else "ANALYZE")
        timings["VACUUM ANALYZE"] = round(time.perf_counter() - started, 1)
        # The derived table, as after a restore: the dashboards' rollup from the base tables.
        started = time.perf_counter()
        call_command("rebuild_activity_rollup", stdout=io.StringIO())
        # Every level of the rollup, as autovacuum would soon after (the daily ones were
        # empty at the VACUUM ANALYZE above: their plans would take them for empty).
        for table in (
            "reviews_activityrollup",
            "reviews_activitydailyrollup",
            "activity_activityaccountrollup",
            "activity_activityaccountdailyrollup",
        ):
            cursor.execute(f"ANALYZE {table}")
        timings["rebuild_activity_rollup"] = round(time.perf_counter() - started, 1)
        counts = {}
        for table in (
            "reviews_contact",
            "reviews_reviewrequest",
            "reviews_message",
            "reviews_activityrollup",
        ):
            cursor.execute(f"SELECT reltuples::bigint FROM pg_class WHERE relname = '{table}'")
            counts[table] = cursor.fetchone()[0]
    return {"seconds": timings, "rows": counts}


# --- The measurements ----------------------------------------------------------------------------


def pages(owner_id: str, size: int) -> list[tuple[str, str, str, str]]:
    """(page, kind of target, who, URL) on the measured business's data (b = 0). ``{sql}`` in
    a URL is replaced by the value of that SQL expression (an id derived like the loader's).
    Every portal page twice: for the owner, and for the manager with two locations
    (``MANAGER_EMAIL``: their searches and detail look for a contact at one of theirs)."""
    g = min(SAMPLE, size // 3)
    mine = g + (MANAGER_LOCATIONS[0] - g) % LOCATIONS  # a request at the manager's location
    default = (
        f"(SELECT id FROM accounts_location WHERE account_id = '{owner_id}' "
        "ORDER BY position, created_at LIMIT 1)"
    )
    location = f"md5('l0-{LOCATIONS // 4}')::uuid"  # one of the 19 that are not the default
    owner_filter = f"owner={owner_id}"
    portal = []
    for who, n, suffix in (("owner", g, ""), ("manager", mine, " (manager, 2 locations)")):
        email = f"{_first(n)}.{_last(n)}{n % 997}.{n}@example.com".lower()
        portal += [
            (f"portal dashboard, first page{suffix}", "portal", who, "/"),
            (f"portal dashboard, oldest page{suffix}", "portal", who, "/?after={oldest}"),
            (f"portal dashboard, all time{suffix}", "portal", who, "/?period=all"),
            (f"portal search, e-mail{suffix}", "portal", who, f"/?q={email.upper()}"),
            (f"portal search, phone{suffix}", "portal", who, f"/?q=(415) {2000000 + n:07d}"),
            (
                f"portal search, name{suffix}",
                "portal",
                who,
                f"/?q={_first(n)} {_last(n)}{n % 997}",
            ),
            (
                f"portal request detail{suffix}",
                "portal",
                who,
                f"/portal/requests/{{{_request(n)}}}/",
            ),
        ]
    email = f"{_first(g)}.{_last(g)}{g % 997}.{g}@example.com".lower()
    return [
        *portal,
        ("admin dashboard", "admin dashboard", "staff", "/admin/reviews/reviewrequest/dashboard/"),
        ("admin review requests", "admin list", "staff", "/admin/reviews/reviewrequest/"),
        (
            "admin review requests, search",
            "admin list",
            "staff",
            f"/admin/reviews/reviewrequest/?q={email}",
        ),
        (
            "admin review requests, owner filter",
            "admin list",
            "staff",
            f"/admin/reviews/reviewrequest/?{owner_filter}",
        ),
        (
            "admin review requests, location filter",
            "admin list",
            "staff",
            f"/admin/reviews/reviewrequest/?{owner_filter}&location={{{location}}}",
        ),
        (
            "admin review requests, default location filter",
            "admin list",
            "staff",
            f"/admin/reviews/reviewrequest/?{owner_filter}&location={{{default}}}",
        ),
        (
            "admin review requests, waiting for a site",
            "admin list",
            "staff",
            f"/admin/reviews/reviewrequest/?{owner_filter}&waiting=site",
        ),
        ("admin messages", "admin list", "staff", "/admin/reviews/message/"),
        ("admin messages, search", "admin list", "staff", f"/admin/reviews/message/?q={email}"),
        (
            "admin messages, filter",
            "admin list",
            "staff",
            "/admin/reviews/message/?status__exact=failed",
        ),
        (
            "admin messages, location filter",
            "admin list",
            "staff",
            f"/admin/reviews/message/?{owner_filter}&location={{{location}}}",
        ),
        (
            "admin contacts, location filter",
            "admin list",
            "staff",
            f"/admin/reviews/contact/?{owner_filter}&location={{{location}}}",
        ),
        (
            "admin clicks, location filter",
            "admin list",
            "staff",
            f"/admin/reviews/click/?{owner_filter}&location={{{location}}}",
        ),
    ]


SAMPLE = 777  # the contact the searches and the detail page look for (an old one)
# The measured manager's two locations: the sample's (SAMPLE % LOCATIONS) and the next.
MANAGER_LOCATIONS = (SAMPLE % LOCATIONS, (SAMPLE + 1) % LOCATIONS)


def _request(g: int) -> str:
    return f"md5('r0-{g}')::uuid"


FIRST = ["Maria", "James", "Aiko", "Olivia", "Noah", "Fatima", "Lucas", "Emma", "Chen", "Sofia"]
LAST = ["Garcia", "Wilson", "Tanaka", "Brown", "Martin", "Khan", "Dubois", "Johnson", "Wei"]
LAST += ["Rossi", "Smith", "Nguyen", "Lopez", "Kim", "Patel", "Silva", "Muller", "Cohen"]
LAST += ["Ivanova", "Okafor"]


def _first(g: int) -> str:
    return FIRST[g % 10]


def _last(g: int) -> str:
    return LAST[(g // 10) % 20]


def _resolve(url: str, owner_id: str) -> str:
    """``{oldest}`` in a URL: the cursor of the business's oldest page (``?after=`` it shows
    the oldest requests); ``{sql}``: the value of that SQL expression (an id derived like the
    loader's)."""
    if "{oldest}" in url:
        from core.pagination import encode_cursor
        from portal.views.requests import PAGE_SIZE
        from reviews.models import ReviewRequest

        owned = ReviewRequest.objects.filter(owner_id=uuid.UUID(owner_id))
        oldest = owned.order_by("created_at", "id")
        return url.replace("{oldest}", encode_cursor(oldest[PAGE_SIZE]))
    if "{" not in url:
        return url
    from django.db import connection

    head, rest = url.split("{", 1)
    expression, tail = rest.split("}", 1)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT ({expression})::text")
        return head + cursor.fetchone()[0] + tail


SLOW_SECONDS = 10.0  # a page whose warm-up takes longer is measured once, not --repeat times


def timed(call, repeat: int) -> dict:
    """One warm-up, then ``repeat`` runs (one if the warm-up took over ``SLOW_SECONDS``: a
    page that slow misses its target by far, and a 1M run should not spend an hour on it):
    median and max ms, the queries of the last run."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    started = time.perf_counter()
    call()
    if time.perf_counter() - started > SLOW_SECONDS:
        repeat = 1
    runs, queries, status = [], 0, None
    for _ in range(repeat):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            status = call()
            runs.append((time.perf_counter() - started) * 1000)
        queries = len(captured)
    return {
        "median_ms": round(statistics.median(runs), 1),
        "max_ms": round(max(runs), 1),
        "queries": queries,
        "status": status,
        "runs_ms": [round(r, 1) for r in runs],
    }


def measure(tree: Tree, size: int, repeat: int) -> dict:
    from django.test import Client
    from django.test.utils import setup_test_environment

    from accounts.models import User
    from config.celery import app as celery_app
    from reviews.models import Message
    from reviews.services import messages_dispatch_due

    setup_test_environment()  # "testserver" allowed; the Client's response context recorded
    staff = User(email="staff@bench.example", is_staff=True, is_superuser=True)
    staff.set_unusable_password()
    staff.save()
    owner, manager, admin = Client(), Client(), Client()
    owner.force_login(User.objects.get(pk=tree.owner_id))
    manager.force_login(User.objects.get(email=MANAGER_EMAIL))
    admin.force_login(staff)
    clients = {"owner": owner, "manager": manager, "staff": admin}
    results = {}
    for name, kind, who, url in pages(tree.owner_id, size):
        url = _resolve(url, tree.owner_id)
        client = clients[who]
        figures = timed(lambda: client.get(url).status_code, repeat)  # noqa: B023 (run now)
        results[name] = {"kind": kind, "url": url, **figures}
        print(f"  {name}: {results[name]['median_ms']} ms", flush=True)

    api = Client(HTTP_AUTHORIZATION=f"Bearer {tree.token}")
    sent = iter(range(10**6))

    def post() -> int:
        n = next(sent)
        body = {"first_name": "Bench", "email": f"write-{n}@bench.example", "delay_hours": 2}
        return api.post(SEND, body, content_type="application/json").status_code

    results["write path (POST contact)"] = {"kind": "write", **timed(post, repeat)}

    def dispatch() -> int:
        return len(messages_dispatch_due(batch_size=CLAIM, limit=CLAIM).claimed)

    results[f"dispatcher claim ({CLAIM})"] = {"kind": "dispatcher", **timed(dispatch, repeat)}
    # Nothing here sends: the claimed rows go back to pending, their tasks off the broker.
    Message.objects.filter(status=Message.Status.QUEUED).update(status=Message.Status.PENDING)
    celery_app.control.purge()
    return results


def run_one(args) -> None:
    """One size in this process, on ``--database-url``; results to ``--out``."""
    var_dir = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    env = service_env(
        settings_module="config.settings",
        database_url=args.database_url,
        redis_url=args.redis_url,
        secret_key=os.environ.get("BENCH_SECRET_KEY", "bench-scale-" + "x" * 50),
        var_dir=var_dir,
        port=0,
        web_workers=1,
    )
    tree = Tree(name=f"scale-{args.one}", root=ROOT, alias="default", env=env)
    run_manage(tree, "migrate", "--noinput")
    # This process is the service here (the pages run in it): all of its environment.
    os.environ.update(env)
    setup_harness(tree, None)
    seed(tree)
    print(f"size {args.one}: loading", flush=True)
    started = time.perf_counter()
    loaded = load(
        owner_id=tree.owner_id,
        size=args.one,
        small=SMALL_BUSINESSES,
        small_requests=args.small_requests,
        due=CLAIM * (args.repeat + 1),  # the warm-up's claim and each run's
    )
    loaded["total_seconds"] = round(time.perf_counter() - started, 1)
    print(f"size {args.one}: loaded in {loaded['total_seconds']} s; measuring", flush=True)
    report = {"size": args.one, "load": loaded, "pages": measure(tree, args.one, args.repeat)}
    args.out.write_text(json.dumps(report, indent=2, default=str) + "\n")


# --- The report ---------------------------------------------------------------------------------


def verdicts(small: dict, big: dict) -> list[dict]:
    """Per page: the big size's median against its target, and the ratio big/small."""
    rows = []
    for name, figure in big["pages"].items():
        base = small["pages"].get(name)
        ratio = round(figure["median_ms"] / base["median_ms"], 2) if base else None
        target = TARGET_MS.get(figure["kind"])
        rows.append(
            {
                "page": name,
                "target_ms": target,
                "met_ms": None if target is None else figure["median_ms"] <= target,
                "ratio": ratio,
                "met_ratio": None if ratio is None else ratio <= TARGET_RATIO,
            }
        )
    return rows


def print_table(sizes: list[dict], rows: list[dict]) -> None:
    small, big = sizes[0], sizes[-1]
    head = "".join(f"{format(s['size'], ',') + ' median/max ms (queries)':>34}" for s in sizes)
    print(f"\n{'page':<38}{head}{'big/small':>11}  targets")
    for row in rows:
        name = row["page"]
        cells = ""
        for size in sizes:
            f = size["pages"][name]
            odd = f["kind"] != "dispatcher" and f["status"] not in (200, 201)
            cell = f"{f['median_ms']:.1f} / {f['max_ms']:.1f} ({f['queries']})"
            if odd:
                cell += f" [HTTP {f['status']}]"
            cells += f"{cell:>34}"
        ratio = "" if row["ratio"] is None else f"{row['ratio']:.2f}"
        marks = []
        if row["target_ms"] is not None:
            marks.append(f"<= {row['target_ms']:.0f} ms {'met' if row['met_ms'] else 'MISSED'}")
        if row["met_ratio"] is not None:
            marks.append(f"ratio {'met' if row['met_ratio'] else 'MISSED'}")
        print(f"{name:<38}{cells}{ratio:>11}  {', '.join(marks)}")
    print(
        f"\nLoad: {small['size']:,} in {small['load']['total_seconds']} s, "
        f"{big['size']:,} in {big['load']['total_seconds']} s "
        f"(+ {SMALL_BUSINESSES} small businesses each time)"
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        type=lambda text: [int(x) for x in text.split(",")],
        default=None,
        help="requests of the measured business, small,big (default 10000,1000000)",
    )
    parser.add_argument("--small-requests", type=int, default=None, help="per small business")
    parser.add_argument("--repeat", type=int, default=None, help="measured runs per page")
    parser.add_argument("--quick", action="store_true", help="sizes 2000,50000, 3 runs a page")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--admin-database-url",
        default=os.environ.get(
            "BENCH_ADMIN_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres"
        ),
    )
    parser.add_argument(
        "--redis-url", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
    )
    # Internal: one size in a child process.
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--database-url", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for key, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if min(args.sizes) < 2 * CLAIM * (args.repeat + 1):
        parser.error(f"sizes must be at least {2 * CLAIM * (args.repeat + 1)} with that --repeat")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.one is not None:
        run_one(args)
        return 0
    started = datetime.now(UTC)
    report: dict = {
        "started_at": started.isoformat(timespec="seconds"),
        "settings": {
            "sizes": args.sizes,
            "small_businesses": SMALL_BUSINESSES,
            "small_requests": args.small_requests,
            "history_days": HISTORY_DAYS,
            "repeat": args.repeat,
            "quick": args.quick,
        },
        "tree": describe(ROOT, "working tree"),
        "sizes": [],
    }
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        for size in args.sizes:
            out = Path(tmp) / f"{size}.json"
            with fresh_database(args.admin_database_url, f"_scale{size}") as url:
                command = [PYTHON, "-m", "bench.scale", "--one", str(size), "--database-url"]
                command += [url, "--out", str(out), "--repeat", str(args.repeat)]
                command += ["--small-requests", str(args.small_requests)]
                command += ["--redis-url", args.redis_url]
                env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
                subprocess.run(command, cwd=ROOT, env=env, check=True)
            report["sizes"].append(json.loads(out.read_text()))
    rows = report["verdicts"] = verdicts(report["sizes"][0], report["sizes"][-1])
    report["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    print_table(report["sizes"], rows)
    out = args.out or RESULTS_DIR / f"{started:%Y-%m-%d}-scale.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"\nWrote {out}")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
