"""The bench's L3 level (``bench.views.round_trips_only``) sends what L4 sends, and nothing else.

L3 is what splits L4/L2 into the round trips the contract asks for and the Python around them
(docs/benchmarks.md). It is only a fair split while L3's statements are L4's: if the endpoint
gains or loses a round trip, or a statement changes shape, this test says L3 must follow.
"""

from __future__ import annotations

import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from connector_api.models import IdempotencyKey
from reviews.models import BusinessSettings, Contact, Message, ReviewRequest

pytestmark = [pytest.mark.django_db, pytest.mark.urls("bench.urls")]

L4 = "/api/zapier/send-review-request"
L3 = "/bench/l3"


@pytest.fixture(autouse=True)
def _postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("L3 replays L4's PostgreSQL statements (advisory locks, one-statement insert)")


def body(email: str) -> str:
    return json.dumps(
        {"first_name": "Bench", "last_name": "User", "email": email, "delay_hours": 2}
    )


def statements(client, url: str, email: str, key: str, **headers) -> tuple[int, list[str]]:
    with CaptureQueriesContext(connection) as captured:
        response = client.post(
            url,
            body(email),
            content_type="application/json",
            HTTP_IDEMPOTENCY_KEY=key,
            **headers,
        )
    sql = [
        q["sql"]
        for q in captured.captured_queries
        if "connector_api_ratelimitcounter" not in q["sql"]  # the embedded default's limiter
    ]
    return response.status_code, sql


def shape(sql: str) -> str:
    """A statement without its literals: what it does, not with which values."""
    sql = re.sub(r"'(?:[^']|'')*'(::\w+)?", "?", sql)
    # Numbers and generated names; a negative number (a lock key may be) is bound as " -123".
    return re.sub(r"\s*-?\w*\d\w*", " ?", sql)


@pytest.mark.parametrize(
    "own_transaction",
    [
        pytest.param(False, id="inside-the-test-transaction"),
        # As under the bench: each request's transaction is the outermost, so its last round
        # trip carries the COMMIT (reviews.rows.run(commit=True)).
        pytest.param(True, id="own-transaction", marks=pytest.mark.django_db(transaction=True)),
    ],
)
def test_l3_sends_l4s_statements_for_a_new_contact_and_writes_the_same_rows(api, own_transaction):
    owner = api.owner
    BusinessSettings.for_owner(owner)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {api.access_token}"}
    # Warm up L4 (the token and the settings cached, the connection's last use just written):
    # the steady state that the bench measures.
    assert api.post(L4, json.loads(body("warm@example.com")), format="json").status_code == 201

    l4_status, l4_sql = statements(api, L4, "four@example.com", "key-4")
    l3_status, l3_sql = statements(
        api, L3, "three@example.com", "key-3", HTTP_X_BENCH_OWNER=str(owner.pk), **auth
    )

    assert (l4_status, l3_status) == (201, 201)
    assert [shape(s) for s in l3_sql] == [shape(s) for s in l4_sql]
    # Only a request's own transaction may commit in the round trip of its last statements,
    # the insert with the stored response.
    (last,) = [s for s in l4_sql if 'UPDATE "connector_api_idempotencykey"' in s]
    assert last.endswith("; COMMIT") is own_transaction
    for email in ("four@example.com", "three@example.com"):
        contact = Contact.objects.get(owner=owner, email_normalized=email)
        request = ReviewRequest.objects.get(contact=contact)
        assert request.status == ReviewRequest.Status.SCHEDULED
        assert sorted(
            Message.objects.filter(review_request=request).values_list("step", "status")
        ) == [(0, "pending"), (1, "planned"), (2, "planned")]
    stored = IdempotencyKey.objects.get(owner=owner, key="key-3")
    assert (stored.state, stored.response_status) == (IdempotencyKey.State.DONE, 201)
    assert json.loads(stored.response_body)["contact_id"] == str(
        Contact.objects.get(owner=owner, email_normalized="three@example.com").pk
    )
