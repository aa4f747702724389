"""Many rows fast, for the tests that check query plans at scale: contacts, one finished
review request each and three sent messages per request, inserted by ``INSERT ... SELECT
generate_series`` straight into the real schema (PostgreSQL only), then ``ANALYZE`` so the
planner knows how big the tables are. Every third row shares its ``created_at`` with the
next ones, so pages split ties."""

from __future__ import annotations

import json

from django.db import connection

_INSERT = """
WITH c AS (
    INSERT INTO reviews_contact (
        id, owner_id, first_name, last_name, company_name, email, email_normalized, phone,
        metadata, source, sms_opt_out_source, email_opt_out_source, created_at, updated_at
    )
    SELECT gen_random_uuid(), %(owner)s, 'First' || i, 'L' || substr(md5(i::text), 1, 8), '',
           'bulk' || i || '@example.com', 'bulk' || i || '@example.com',
           '+1999' || lpad(i::text, 7, '0'), '{}', 'api', '', '',
           %(newest)s - (i / 3) * interval '1 second', %(newest)s
    FROM generate_series(1, %(count)s) AS i
    RETURNING id, owner_id, created_at
), r AS (
    INSERT INTO reviews_reviewrequest (
        id, owner_id, contact_id, status, scheduled_for, token, ended_reason, ended_detail,
        created_at, updated_at, sent_at, completed_at, ended_at
    )
    SELECT gen_random_uuid(), owner_id, id, 'completed', created_at, md5(random()::text || id),
           'sequence_finished', '', created_at, created_at, created_at, created_at, created_at
    FROM c
    RETURNING id, created_at
)
INSERT INTO reviews_message (
    id, review_request_id, step, channel, status, planned_offset, to_address, attempts,
    last_error, last_error_code, provider, provider_message_id, created_at, updated_at, sent_at
)
SELECT gen_random_uuid(), r.id, s.step, 'sms', 'sent', make_interval(days => 3 * s.step), '',
       1, '', '', 'twilio', 'SM' || md5(r.id::text || s.step), r.created_at, r.created_at,
       r.created_at
FROM r CROSS JOIN generate_series(0, 2) AS s(step)
"""


_HISTORY = """
WITH g AS MATERIALIZED (
    SELECT i, gen_random_uuid() AS contact_id, gen_random_uuid() AS request_id,
           %(now)s - random() * %(days)s * interval '1 day' AS at, i %% 10 = 0 AS failed
    FROM generate_series(0, %(count)s - 1) AS i
), c AS (
    INSERT INTO reviews_contact (
        id, owner_id, first_name, last_name, company_name, email, email_normalized, phone,
        metadata, source, sms_opt_out_source, email_opt_out_source, created_at, updated_at
    )
    SELECT contact_id, %(owner)s, '', '', '', 'p' || i || '@example.com',
           'p' || i || '@example.com', '', '{}', 'api', '', '', %(now)s, %(now)s
    FROM g
), r AS (
    INSERT INTO reviews_reviewrequest (
        id, owner_id, contact_id, status, scheduled_for, token, ended_reason, ended_detail,
        created_at, updated_at, sent_at, delivered_at, clicked_at, failed_at, ended_at
    )
    SELECT request_id, %(owner)s, contact_id,
           CASE WHEN failed THEN 'failed' ELSE 'completed' END, at, md5(request_id::text), '',
           '', at, at, CASE WHEN NOT failed THEN at END, CASE WHEN NOT failed THEN at END,
           CASE WHEN i %% 3 = 0 AND NOT failed THEN at END, CASE WHEN failed THEN at END, at
    FROM g
)
INSERT INTO reviews_message (
    id, review_request_id, step, channel, status, planned_offset, to_address, attempts,
    last_error, last_error_code, provider, provider_message_id, created_at, updated_at,
    failed_at
)
SELECT gen_random_uuid(), request_id, 0, 'email',
       CASE WHEN failed THEN 'failed' ELSE 'delivered' END, interval '0', '', 0,
       CASE WHEN failed THEN 'boom' ELSE '' END,
       CASE WHEN failed THEN 'code-' || i %% 7 ELSE '' END, '', '', %(now)s, %(now)s,
       CASE WHEN failed THEN at END
FROM g
"""


def load_history(owner, *, count: int, days: int, now) -> None:
    """``count`` requests of ``owner`` (a contact each) spread at random over the ``days``
    before ``now``, one e-mail message each: every tenth failed (error codes ``code-0`` to
    ``code-6``), the others completed, a third of them clicked. The same rows each run."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT setseed(0.26)")
        cursor.execute(_HISTORY, {"owner": owner.pk, "count": count, "days": days, "now": now})


def load_requests(owner, *, count: int, newest) -> None:
    """``count`` contacts of ``owner``, with a finished request each (three messages), created
    one second apart in threes, the newest at ``newest``."""
    with connection.cursor() as cursor:
        cursor.execute(_INSERT, {"owner": owner.pk, "count": count, "newest": newest})


def analyze() -> None:
    """Table statistics for the planner, and the trigram index's pending entries merged (as
    autovacuum would: a GIN index's fast-update list makes the planner shun the index)."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE reviews_contact, reviews_reviewrequest, reviews_message")
        cursor.execute("SELECT gin_clean_pending_list('reviews_contact_search_trgm')")


def remove_all() -> None:
    """Empty the review tables again (after a module's committed rows)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE reviews_message, reviews_click, reviews_feedback, reviews_optoutevent, "
            "reviews_reviewrequest, reviews_contact CASCADE"
        )


def plan_nodes(plan: dict):
    """Every node of an ``EXPLAIN (FORMAT JSON)`` plan, with its parent's node type."""
    stack = [(plan, "")]
    while stack:
        node, parent = stack.pop()
        yield node, parent
        stack.extend((child, node["Node Type"]) for child in node.get("Plans", ()))


def index_access_methods(plan: dict, relation: str) -> set[str]:
    """The access methods (``btree``, ``gin``...) of the indexes the plan reads on ``relation``."""
    used = {
        node["Index Name"]
        for node, _ in plan_nodes(plan)
        if "Index Name" in node and node.get("Relation Name", relation) == relation
    }
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT am.amname FROM pg_class i JOIN pg_am am ON am.oid = i.relam"
            " JOIN pg_index x ON x.indexrelid = i.oid"
            " WHERE i.relname = ANY(%s) AND x.indrelid = %s::regclass",
            [list(used), relation],
        )
        return {method for (method,) in cursor.fetchall()}


def plan_scans(queryset) -> list[tuple[str, str, str]]:
    """(node type, table, index) of every scan in the queryset's plan."""
    plan = json.loads(queryset.explain(format="json"))
    scans = []

    def walk(node):
        if "Scan" in node["Node Type"]:
            scans.append(
                (node["Node Type"], node.get("Relation Name", ""), node.get("Index Name", ""))
            )
        for child in node.get("Plans", []):
            walk(child)

    for entry in plan:
        walk(entry["Plan"])
    return scans
