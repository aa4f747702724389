"""Baselines the real endpoint is measured against, in the same process and middleware stack.

* L1 ``bare_json``: a Django view that returns JSON and touches nothing: the framework ceiling.
* L2 ``raw_sql_write``: the writes ``POST /api/zapier/send-review-request`` makes for a new
  contact (upsert the contact, insert the review request and its three message rows) as ONE SQL
  statement through Django's connection: the floor for a Django write endpoint on this machine.
  No authentication, validation, rate limiting, idempotency or dispatch kick: that is what the
  real endpoint (L4) adds on top.

Both stand alone: they use Django and their own SQL, nothing of the service's code, so they
measure the same floor whatever the service's code becomes. Only the tables' schema is shared
(L2 writes the rows the service would read).
"""

from __future__ import annotations

import json
import secrets

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

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
