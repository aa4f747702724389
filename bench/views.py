"""Baselines the real endpoint is measured against, in the same process and middleware stack.

* L1 ``bare_json``: a Django view that returns JSON and touches nothing: the framework ceiling.
* L2 ``raw_sql_write``: the writes ``POST /api/zapier/send-review-request`` makes for a new
  contact (upsert the contact, insert the review request and its three message rows) as ONE SQL
  statement through Django's connection: the floor for a Django write endpoint on this machine.
  No authentication, validation, rate limiting, idempotency or dispatch kick: that is what the
  real endpoint (L4) adds on top.
* L3 ``round_trips_only``: what L4 sends to Redis and PostgreSQL for a new contact, in its order,
  with its statements and parameters, and as little Python as can send them: no framework
  beyond Django's view, no model instances, no validation, no response built from models. It
  splits the gap between L2 and L4 into the round trips the contract asks for (the token
  lookup, the rate-limit counter, the owner's settings, the ``Idempotency-Key`` claim, the
  advisory lock with the contact match, the insert with the stored response, the commit) and
  the Python that L4 runs around them. It trusts its input (the bench's own), so it is a
  measure, never an endpoint.
"""

from __future__ import annotations

import json
import secrets
import time
import uuid
from datetime import timedelta

from django.core.cache import cache
from django.db import connection, transaction
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from connector_api import idempotency
from core import ratelimit, versioned_cache
from oauth_provider import token_cache
from oauth_provider.models import token_digest
from reviews import inserts, rows
from reviews.models import BusinessSettings, Contact, Message, ReviewRequest
from reviews.selectors import _matching_sql
from reviews.services.contacts import dedup_lock_key

WRITE_SQL = """
WITH contact AS (
    INSERT INTO reviews_contact (
        id, owner_id, first_name, last_name, company_name, email, email_normalized, phone,
        metadata, source, sms_opt_out_source, email_opt_out_source, created_at, updated_at)
    VALUES (gen_random_uuid(), %(owner)s, %(first_name)s, %(last_name)s, '', %(email)s,
            lower(%(email)s), '', '{}'::jsonb, 'api', '', '', now(), now())
    ON CONFLICT (owner_id, email_normalized) WHERE email_normalized <> ''
    DO UPDATE SET first_name = EXCLUDED.first_name, updated_at = now()
    RETURNING id
), request AS (
    INSERT INTO reviews_reviewrequest (
        id, owner_id, contact_id, status, scheduled_for, token, ended_reason, ended_detail,
        created_at, updated_at)
    SELECT gen_random_uuid(), %(owner)s, contact.id, 'scheduled',
           now() + make_interval(hours => %(delay_hours)s), %(token)s, '', '', now(), now()
    FROM contact
    ON CONFLICT DO NOTHING
    RETURNING id, contact_id, scheduled_for
), messages AS (
    INSERT INTO reviews_message (
        id, review_request_id, step, channel, status, planned_offset, due_at, to_address,
        attempts, last_error, last_error_code, provider, provider_message_id, created_at,
        updated_at)
    SELECT gen_random_uuid(), request.id, plan.step, 'email',
           CASE WHEN plan.step = 0 THEN 'pending' ELSE 'planned' END, plan.offset_,
           CASE WHEN plan.step = 0 THEN request.scheduled_for END,
           '', 0, '', '', '', '', now(), now()
    FROM request,
         (VALUES (0, interval '0'), (1, interval '72 hours'), (2, interval '168 hours'))
         AS plan (step, offset_)
)
SELECT request.id, request.contact_id, request.scheduled_for FROM request
"""


def bare_json(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@csrf_exempt
def raw_sql_write(request: HttpRequest) -> JsonResponse:
    data = json.loads(request.body)
    with connection.cursor() as cursor:
        cursor.execute(
            WRITE_SQL,
            {
                "owner": request.headers["X-Bench-Owner"],
                "first_name": data.get("first_name", ""),
                "last_name": data.get("last_name", ""),
                "email": data["email"],
                "delay_hours": int(data.get("delay_hours", 0)),
                "token": secrets.token_urlsafe(16),
            },
        )
        row = cursor.fetchone()
    if row is None:  # the contact already has an active request
        return JsonResponse({"status": "existing"}, status=200)
    return JsonResponse(
        {"id": str(row[0]), "contact_id": str(row[1]), "scheduled_for": row[2].isoformat()},
        status=201,
    )


L3_ENDPOINT = "bench-l3"


@csrf_exempt
def round_trips_only(request: HttpRequest) -> JsonResponse:
    """L4's round trips for a new contact, nothing else (see the module docstring)."""
    owner = request.headers["X-Bench-Owner"]
    data = json.loads(request.body)
    email = data["email"].lower()
    # Redis, three round trips as in L4: the token's cache entry with its generation, the
    # owner's rate-limit counter (the limiter's own store), the settings' entry with its
    # generation. Nothing is built from what they return.
    token_key = token_cache._key(token_digest(request.headers["Authorization"][7:]))
    cache.get_many([token_key, versioned_cache._generation_key(token_key)])
    ratelimit.get_limiter().store.incr(f"bench-l3:{owner}", window=3600, now=time.time())
    settings_key = BusinessSettings.cache_key(uuid.UUID(owner))
    cache.get_many([settings_key, versioned_cache._generation_key(settings_key)])
    # PostgreSQL, four round trips as in L4: the claim (its own asynchronous commit), BEGIN,
    # the advisory lock with the match, the insert with the stored response and COMMIT.
    now = timezone.now()
    fingerprint = idempotency.request_fingerprint(endpoint=L3_ENDPOINT, data=data)
    with connection.cursor() as cursor:
        cursor.execute(
            idempotency._claim_sql(not connection.in_atomic_block),  # as L4 chooses
            [
                owner,
                request.headers["Idempotency-Key"],
                L3_ENDPOINT,
                fingerprint,
                "in_progress",
                "",
                now,
                now,
            ],
        )
        (claim_id,) = cursor.fetchone()
    lock = dedup_lock_key(owner, "email", email)
    contact_id, request_id = str(uuid.uuid4()), str(uuid.uuid4())
    stamp = now.isoformat()
    scheduled = (now + timedelta(hours=int(data.get("delay_hours", 0)))).replace(microsecond=0)
    name = f"{data.get('first_name', '')} {data.get('last_name', '')}".strip()
    answer = {
        "id": request_id,
        "contact_id": contact_id,
        "contact_name": name,
        "contact_email": email,
        "contact_phone": None,
        "scheduled_for": scheduled.isoformat().replace("+00:00", "Z"),
        "status": "scheduled",
        "message": f"Review request scheduled for {name} by e-mail.",
    }
    contact = {
        "id": contact_id, "owner_id": owner, "first_name": data.get("first_name", ""),
        "last_name": data.get("last_name", ""), "company_name": "", "email": data["email"],
        "email_normalized": email, "phone": "", "metadata": {}, "source": "api",
        "sms_opted_out_at": None, "sms_opt_out_source": "", "email_opted_out_at": None,
        "email_opt_out_source": "", "created_at": stamp, "updated_at": stamp,
    }  # fmt: skip
    review_request = {
        "id": request_id, "owner_id": owner, "contact_id": contact_id, "status": "scheduled",
        "scheduled_for": scheduled.isoformat(), "token": secrets.token_urlsafe(16),
        "ended_reason": "", "ended_detail": "", "created_at": stamp, "updated_at": stamp,
    }  # fmt: skip
    messages = [
        {
            "id": str(uuid.uuid4()),
            "review_request_id": request_id,
            "step": step,
            "channel": "email",
            "status": "pending" if step == 0 else "planned",
            "planned_offset": offset,
            "due_at": scheduled.isoformat() if step == 0 else None,
            "to_address": "",
            "attempts": 0,
            "last_error": "",
            "last_error_code": "",
            "provider": "",
            "provider_message_id": "",
            "created_at": stamp,
            "updated_at": stamp,
        }
        for step, offset in ((0, "P0DT0S"), (1, "P3DT0S"), (2, "P7DT0S"))
    ]
    with transaction.atomic():
        # The statement L4's dedup runs for a contact with an e-mail only, locking what it finds.
        match = _matching_sql(True, False, True)
        rows.run([("SELECT pg_advisory_xact_lock(%s)", [lock]), (match, [owner, email])])
        rows.run(
            [
                (
                    inserts._statement((Contact, ReviewRequest, Message)),
                    [json.dumps([contact]), json.dumps([review_request]), json.dumps(messages)],
                ),
                (
                    idempotency._complete_sql(),
                    ["done", 201, json.dumps(answer), now, claim_id, "in_progress", now],
                ),
            ],
            commit=True,
        )
    return JsonResponse(answer, status=201)
