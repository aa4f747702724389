"""bench-scale's data set: the measured business and 199 small ones, loaded through the real
schema with ``INSERT ... SELECT generate_series`` (see ``bench/scale/__init__.py``), and the
generator's names, e-mails and phones in Python, for the pages that look for them."""

from __future__ import annotations

import io
import time
from typing import Any

SMALL_BUSINESSES = 199
HISTORY_DAYS = 730  # every business's requests are spread over two years
# The big account's team (issue 37): its locations (the first, its default, from
# create_business) and members (managers and every fifth a viewer, three locations each); the
# first member is the measured manager, with two locations.
LOCATIONS = 20
MEMBERS = 50
MANAGER_EMAIL = "member0@bench.example"
SAMPLE = 777  # the contact the searches and the detail page look for (an old one)
# The measured manager's two locations: the sample's (SAMPLE % LOCATIONS) and the next.
MANAGER_LOCATIONS = (SAMPLE % LOCATIONS, (SAMPLE + 1) % LOCATIONS)

# The contacts' names: request g's contact is FIRST[g % 10] LAST[(g // 10) % 20] + (g % 997),
# e-mail first.last<g % 997>.<g>@example.com, phone +1415 (2000000 + g).
FIRST = ["Maria", "James", "Aiko", "Olivia", "Noah", "Fatima", "Lucas", "Emma", "Chen", "Sofia"]
LAST = ["Garcia", "Wilson", "Tanaka", "Brown", "Martin", "Khan", "Dubois", "Johnson", "Wei"]
LAST += ["Rossi", "Smith", "Nguyen", "Lopez", "Kim", "Patel", "Silva", "Muller", "Cohen"]
LAST += ["Ivanova", "Okafor"]
NUMBERS = 997  # the last name's number: g % NUMBERS


def first_name(g: int) -> str:
    return FIRST[g % len(FIRST)]


def last_name(g: int) -> str:
    return f"{LAST[(g // len(FIRST)) % len(LAST)]}{g % NUMBERS}"


def email(g: int) -> str:
    return f"{first_name(g)}.{last_name(g)}.{g}@example.com".lower()


def phone(g: int) -> str:
    """Contact g's number in E.164 (+1 415 and seven digits)."""
    return f"+1415{2000000 + g}"


def share(word: str, size: int) -> float:
    """The share of the measured business's ``size`` contacts that a one-word name search for
    ``word`` finds (the portal's rule: in the first or last name, ignoring case, or in the
    e-mail; the company is empty)."""
    word = word.lower()
    found = sum(
        word in first_name(g).lower() or word in last_name(g).lower() or word in email(g)
        for g in range(1, size + 1)
    )
    return found / size


# --- The data --------------------------------------------------------------------------------


def _array(names: list[str]) -> str:
    return ",".join(f"'{name}'" for name in names)


# One row per (business b, request g): b = 0 is the measured business with ``size`` requests,
# b = 1..199 the small ones. Ids are derived from (b, g) so that every table is one statement.
# The measured business's request g is at its location g % LOCATIONS (0, its default: no
# location, as the rows from before locations); the small businesses' have none.
ROWS = f"""
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
           (ARRAY[{_array(FIRST)}])[1 + g %% {len(FIRST)}] AS first_name,
           (ARRAY[{_array(LAST)}])[1 + (g / {len(FIRST)}) %% {len(LAST)}] || (g %% {NUMBERS})
               AS last_name
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
