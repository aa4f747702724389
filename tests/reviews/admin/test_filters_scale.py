"""The contact list's "opted out" filter and the opt-out audit's search at scale (PostgreSQL):
each reads its own index (the plan's access method), not the whole list's newest-first index
filtered row by row until a page of rare rows is found."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from reviews.models import Contact, OptOutEvent
from tests.factories import ContactFactory
from tests.reviews.admin.test_changelists_scale import data, staff  # noqa: F401
from tests.support.scale_data import plan_nodes

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def indexes_read(client, url: str, params: dict) -> set[str]:
    """The indexes the page's SELECTs read."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, params)
    assert response.status_code == 200
    found = set()
    for query in queries.captured_queries:
        if not query["sql"].startswith("SELECT"):
            continue
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (FORMAT JSON) {query['sql']}")
            (raw,) = cursor.fetchone()
        plan = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
        found |= {node["Index Name"] for node, _ in plan_nodes(plan) if "Index Name" in node}
    return found


@pytest.mark.parametrize("which", ["sms", "email", "any"])
def test_the_opted_out_filter_reads_the_opted_out_index(data, staff, which):  # noqa: F811
    now = timezone.now()
    ContactFactory(owner=data["other"], phone="+14155550142", sms_opted_out_at=now)
    ContactFactory(owner=data["other"], email="gone@example.com", email_opted_out_at=now)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Contact._meta.db_table}")
    read = indexes_read(staff, "/admin/reviews/contact/", {"opted_out": which})
    assert "reviews_contact_opted_out" in read, read


def test_the_audit_search_reads_the_address_index(data, staff):  # noqa: F811
    owner = data["owner"]
    OptOutEvent.objects.bulk_create(
        OptOutEvent(
            owner=owner,
            channel="sms",
            action=OptOutEvent.Action.OPT_OUT,
            source=Contact.OptOutSource.SMS_REPLY,
            address=f"+1415{2_000_000 + n}",
        )
        for n in range(20_000)
    )
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {OptOutEvent._meta.db_table}")
    page = staff.get("/admin/reviews/optoutevent/", {"q": "+1 (415) 200-0042"})
    assert [event.address for event in page.context["cl"].result_list] == ["+14152000042"]
    read = indexes_read(staff, "/admin/reviews/optoutevent/", {"q": "+14152000042"})
    assert "reviews_optout_search" in read, read
