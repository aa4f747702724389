"""The dispatcher's claim at scale (PostgreSQL): with a backlog of due messages, the claim of
one batch reads that batch in index order (``reviews_message_due_claim``), never every due row
and a sort: its cost follows the batch, not the backlog."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from reviews.models import Message, ReviewRequest
from tests.factories import ContactFactory
from tests.support.scale_data import plan_nodes

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

BACKLOG = 5_000


def test_a_claim_reads_its_batch_in_index_order(business):
    now = timezone.now()
    contact = ContactFactory(owner=business)
    request = ReviewRequest.objects.create(owner=business, contact=contact, scheduled_for=now)
    Message.objects.bulk_create(
        Message(
            review_request=request,
            step=n,
            channel="email",
            status=Message.Status.PENDING,
            due_at=now - timedelta(seconds=n),
        )
        for n in range(BACKLOG)
    )
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Message._meta.db_table}")
    # The claim: due pending rows, oldest first, one batch, skipping rows another claim holds.
    claim = (
        Message.objects.filter(status=Message.Status.PENDING, due_at__lte=now)
        .select_for_update(skip_locked=True)
        .order_by("due_at", "pk")
        .values_list("pk", flat=True)[:100]
    )
    plan = json.loads(claim.explain(format="json"))[0]["Plan"]
    nodes = [node for node, _ in plan_nodes(plan)]
    assert not [n for n in nodes if n["Node Type"] in ("Sort", "Seq Scan")], nodes
    assert any(n.get("Index Name") == "reviews_message_due_claim" for n in nodes), nodes
