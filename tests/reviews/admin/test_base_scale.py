"""The back office's lists at scale (reviews.admin, PostgreSQL): with 30k requests over 20
locations and 90k messages, no query of a list page reads a big table sequentially (except under a
LIMIT, which stops after the rows it needs), the unfiltered count is the planner's estimate, the
location filters read the requests' location index, and the contacts' "opted out" filter and the
opt-out audit's search each read their own index."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import User
from core import pagination
from reviews.models import Contact, Message, OptOutEvent, ReviewRequest, ReviewSite
from tests.factories import (
    ContactFactory,
    LocationFactory,
    ReviewRequestFactory,
    UserFactory,
    first_location,
)
from tests.support.scale_data import (
    analyze,
    index_access_methods,
    load_requests,
    plan_nodes,
    remove_all,
)

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

BIG_TABLES = {"reviews_reviewrequest", "reviews_contact", "reviews_message"}


@pytest.fixture(scope="module")
def data(django_db_setup, django_db_blocker):
    """Loaded once for the module (committed), removed after it."""
    with django_db_blocker.unblock():
        now = timezone.now()
        owner, other = UserFactory(business_name="Big Co"), UserFactory()
        load_requests(owner, count=30_000, newest=now)
        load_requests(other, count=1_000, newest=now)
        # Big Co's 20 locations, its requests spread over them; the default's with no
        # location, as rows from before locations.
        locations = [first_location(owner)]
        locations += [LocationFactory(account=owner, name=f"Branch {n}") for n in range(1, 20)]
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE reviews_reviewrequest SET location_id = (%s::uuid[])"
                "[1 + abs(hashtext(id::text)) %% 20] WHERE owner_id = %s",
                [[str(location.pk) for location in locations], owner.pk],
            )
            cursor.execute(
                "UPDATE reviews_reviewrequest SET location_id = NULL WHERE location_id = %s",
                [locations[0].pk],
            )
        maria = ContactFactory(
            owner=other,
            first_name="Maria",
            last_name="Garcia",
            email="Maria.Garcia@Example.com",
            email_normalized="maria.garcia@example.com",
            phone="+14155550199",
        )
        Message.objects.create(
            review_request=ReviewRequestFactory(contact=maria),
            step=1,
            channel="sms",
            status="planned",
        )
        analyze()
        with connection.cursor() as cursor:
            # The visibility map autovacuum keeps (index-only scans read no heap page).
            cursor.execute("VACUUM reviews_reviewrequest")
        message = Message.objects.filter(review_request__owner=owner).first()
        yield {"owner": owner, "other": other, "message": message, "locations": locations}
        remove_all()
        User.objects.filter(pk__in=[owner.pk, other.pk]).delete()


@pytest.fixture
def staff(db) -> Client:
    client = Client()
    client.force_login(UserFactory.create(is_staff=True, is_superuser=True))
    return client


def explain(sql: str) -> dict:
    """The plan of a captured statement (``EXPLAIN (FORMAT JSON)``), its top node."""
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}")
        (raw,) = cursor.fetchone()
    return (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]


def sequential_scans(sql: str) -> list[str]:
    """Big tables the statement reads sequentially, other than under a LIMIT."""
    plan = explain(sql)
    return [
        node["Relation Name"]
        for node, parent in plan_nodes(plan)
        if node["Node Type"] == "Seq Scan"
        and node["Relation Name"] in BIG_TABLES
        and parent != "Limit"
    ]


def assert_no_table_scan(staff, url, params):
    with CaptureQueriesContext(connection) as queries:
        response = staff.get(url, params)
    assert response.status_code == 200
    selects = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT")]
    for sql in selects:
        assert not sequential_scans(sql), sql
    return response


CASES = [
    ("reviewrequest", {}),
    ("reviewrequest", {"q": "maria.garcia@example.COM"}),
    ("reviewrequest", {"q": "garcia"}),
    ("reviewrequest", {"q": "+1 415 555 0199"}),
    ("reviewrequest", {"status__exact": "failed"}),
    ("message", {}),
    ("message", {"q": "Maria.Garcia@example.com"}),
    ("message", {"provider": "twilio"}),
    ("contact", {}),
    ("contact", {"q": "garcia"}),
]


@pytest.mark.parametrize(("model", "params"), CASES)
def test_list_pages_read_indexes(data, staff, model, params):
    assert_no_table_scan(staff, f"/admin/reviews/{model}/", params)


@pytest.mark.parametrize("model", ["reviewrequest", "message", "contact"])
@pytest.mark.parametrize("search", ["Maria.Garcia@example.com", "+1 415 555 0199"])
def test_a_whole_address_across_businesses_reads_a_btree_key(data, staff, model, search):
    """Not the trigram index: an equality there intersects the posting lists of every trigram
    of the address, which grow with the table (staff name no business, so the owner's unique
    keys cannot serve)."""
    with CaptureQueriesContext(connection) as queries:
        response = staff.get(f"/admin/reviews/{model}/", {"q": search})
    assert response.context["cl"].result_count == 1
    searches = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith("SELECT") and "reviews_contact" in q["sql"]
    ]
    assert searches
    for sql in searches:
        plan = explain(sql)
        assert index_access_methods(plan, "reviews_contact") == {"btree"}, plan


def test_filters_by_owner_and_search_by_provider_id_read_indexes(data, staff):
    owner = data["other"]
    for model in ("reviewrequest", "contact"):
        page = assert_no_table_scan(staff, f"/admin/reviews/{model}/", {"owner": owner.email})
        assert page.context["cl"].result_count == 1_001
    message = data["message"]
    page = assert_no_table_scan(
        staff, "/admin/reviews/message/", {"q": message.provider_message_id}
    )
    assert list(page.context["cl"].result_list) == [message]


def test_the_unfiltered_count_is_an_estimate_and_a_search_count_is_exact(data, staff):
    page = staff.get("/admin/reviews/message/")
    paginator = page.context["cl"].paginator
    assert paginator.count_is_estimate
    assert 80_000 < paginator.count < 110_000  # 93,003 rows
    assert "about " in page.content.decode()
    found = staff.get("/admin/reviews/message/", {"q": "maria.garcia@example.com"})
    assert not found.context["cl"].paginator.count_is_estimate


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
def test_the_opted_out_filter_reads_the_opted_out_index(data, staff, which):
    now = timezone.now()
    ContactFactory(owner=data["other"], phone="+14155550142", sms_opted_out_at=now)
    ContactFactory(owner=data["other"], email="gone@example.com", email_opted_out_at=now)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Contact._meta.db_table}")
    read = indexes_read(staff, "/admin/reviews/contact/", {"opted_out": which})
    assert "reviews_contact_opted_out" in read, read


def test_the_audit_search_reads_the_address_index(data, staff):
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


@pytest.mark.parametrize(
    ("model", "place"),
    [
        ("reviewrequest", 5),
        ("reviewrequest", 0),  # the default: its rows with no location too
        ("message", 5),
        ("contact", 5),
    ],
)
def test_the_location_filters_read_indexes(data, staff, model, place):
    """Every list filtered by location finds the location's requests on their index (the
    contacts' list on the one that also holds the contact); the requests' own list reads no
    table whole. (Messages are counted with a hash join at this size, a sequential read the
    planner prefers to 1,500 index probes here.)"""
    location = data["locations"][place]
    params = {"owner": data["owner"].email, "location": str(location.pk)}
    read = indexes_read(staff, f"/admin/reviews/{model}/", params)
    index = "loc_contacts" if model == "contact" else "location_list"
    assert f"reviews_request_{index}" in read, read
    if model == "reviewrequest":
        page = assert_no_table_scan(staff, f"/admin/reviews/{model}/", params)
        # 30,000 over 20 locations, by a hash: about 1,500 each.
        assert 1_000 < page.context["cl"].result_count < 2_000


def test_the_waiting_filter_reads_no_table_whole(data, staff):
    page = assert_no_table_scan(
        staff, "/admin/reviews/reviewrequest/", {"owner": data["owner"].email, "waiting": "site"}
    )
    assert page.context["cl"].result_count == 0  # every request of the data set has ended


def requests_read(client, url: str, params: dict) -> int:
    """The review requests the page's statements read (``EXPLAIN ANALYZE``: the rows its scans
    of ``reviews_reviewrequest`` return)."""
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url, params).status_code == 200
    read = 0
    for query in queries.captured_queries:
        if not query["sql"].startswith("SELECT"):
            continue
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {query['sql']}")
            (raw,) = cursor.fetchone()
        read += requests_in_plan(raw)
    return read


def requests_in_plan(raw) -> int:
    """The rows the scans of ``reviews_reviewrequest`` read in an ``EXPLAIN (ANALYZE, FORMAT
    JSON)`` answer: those they return and those their filters drop."""
    plan = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
    return sum(
        (node["Actual Rows"] + node.get("Rows Removed by Filter", 0)) * node["Actual Loops"]
        for node, _ in plan_nodes(plan)
        if node.get("Relation Name") == "reviews_reviewrequest" and "Scan" in node["Node Type"]
    )


def test_the_waiting_filter_reads_only_the_requests_of_a_location_without_a_site(data, staff):
    """The locations that list no site are found first, then their requests: not the account's
    active requests, each with two default-location lookups (3,000 of them here)."""
    owner, locations = data["owner"], data["locations"]
    siteless = locations[7]
    ReviewSite.objects.bulk_create(
        ReviewSite(owner=owner, location=location, url=f"https://g.page/r/big-{n}/review")
        for n, location in enumerate(locations)
        if location != siteless
    )
    listed = ReviewRequest.objects.filter(owner=owner).exclude(location=siteless)
    active = list(listed.order_by("pk").values_list("pk", flat=True)[:3_000])
    ReviewRequest.objects.filter(pk__in=active).update(status="delivered")
    waiting = list(ReviewRequest.objects.filter(owner=owner, location=siteless).order_by("pk")[:3])
    ReviewRequest.objects.filter(pk__in=[r.pk for r in waiting]).update(status="scheduled")
    analyze()
    params = {"owner": owner.email, "waiting": "site"}
    page = assert_no_table_scan(staff, "/admin/reviews/reviewrequest/", params)
    assert {r.pk for r in page.context["cl"].result_list} == {r.pk for r in waiting}
    # The siteless location has about 1,500 requests.
    assert requests_read(staff, "/admin/reviews/reviewrequest/", params) < 2_000


@pytest.mark.parametrize("place", [5, 0])
def test_the_location_filtered_contacts_are_counted_from_the_requests(data, staff, place):
    """The contacts of one location are counted from the location's requests (their index,
    stopping at the count's cap), not by a semi-join reading every contact of the account."""
    location = data["locations"][place]
    params = {"owner": data["owner"].email, "location": str(location.pk)}
    page = assert_no_table_scan(staff, "/admin/reviews/contact/", params)
    at = ReviewRequest.objects.filter(owner=data["owner"])
    at = at.filter(location=None) if place == 0 else at.filter(location=location)
    assert page.context["cl"].result_count == at.values("contact").distinct().count()


@pytest.mark.parametrize(("place", "most"), [(5, 101), (0, 2_000)])
def test_a_locations_contacts_past_the_cap_are_counted_without_reading_all_its_requests(
    data, staff, monkeypatch, place, most
):
    """Past the count's cap, a location's contacts are counted from the requests' location and
    contact index in order, stopping at the cap: not every request of the location read and
    hashed (about 1,500 here with a cap of 100; 50,000 at 1M requests with the cap of 10,000).
    The default location's (its own requests and those with no location) read its two index
    ranges (about 1,500), not the account's requests in contact order (30,000 here)."""
    monkeypatch.setattr(pagination, "EXACT_COUNT_CAP", 100)
    params = {"owner": data["owner"].email, "location": str(data["locations"][place].pk)}
    paginator = staff.get("/admin/reviews/contact/", params).context["cl"].paginator
    assert paginator.count_is_estimate
    # What the count counted, read as the count reads it (up to the cap and one more).
    counted = paginator.counted.order_by()[:101]
    assert len(counted) == 101
    assert requests_in_plan(counted.explain(analyze=True, format="json")) <= most


def test_the_default_location_reads_its_rows_beside_many_unplaced_rows(data, staff):
    """The default location's requests (its own and those with no location) are counted from
    the location index: the rows read are the location's, not the table's, while another
    business has 20,000 unplaced requests beside Big Co's 1,500. (At 200,000 requests the
    ``OR`` form planned a sequential read of the table, expecting the cap's rows soon; so did
    each branch of the sum here until the planner knew owner and location together: the
    share of rows with no location times Big Co's share of the table, 13,000 expected, 1,500
    found. docs/benchmarks.md.)"""
    owner, default = data["owner"], data["locations"][0]
    load_requests(UserFactory(), count=20_000, newest=timezone.now())
    analyze()
    params = {"owner": owner.email, "location": str(default.pk)}
    page = staff.get("/admin/reviews/reviewrequest/", params)
    unplaced = ReviewRequest.objects.filter(owner=owner, location=None)
    assert page.context["cl"].result_count == unplaced.count()
    # The 1,500 rows counted and the page's walk of Big Co's newest rows (one in twenty is
    # the default's: about 2,000 for the page's 100), not the table's 51,000.
    assert requests_read(staff, "/admin/reviews/reviewrequest/", params) < 10_000
