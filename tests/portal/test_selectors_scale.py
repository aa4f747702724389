"""The dashboard's list at scale (portal.selectors, PostgreSQL): with tens of thousands of
requests, each of its queries reads through an index (never a sequential scan of a big table), a
page costs the same number of queries, and search finds what the owner typed however they typed
it."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.utils import timezone

from accounts.access import access_for
from accounts.models import User
from core.pagination import keyset_slice
from portal.selectors import review_requests_list
from reviews.models import BusinessSettings
from tests.factories import ContactFactory, ReviewRequestFactory, UserFactory
from tests.support.scale_data import (
    analyze,
    index_access_methods,
    load_requests,
    plan_nodes,
    remove_all,
)

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

BIG_TABLES = {"reviews_reviewrequest", "reviews_contact", "reviews_message"}
ROWS = 30_000


@pytest.fixture(scope="module")
def big_owner(django_db_setup, django_db_blocker):
    """Loaded once for the module (committed), removed after it."""
    with django_db_blocker.unblock():
        now = timezone.now()
        owner, other = UserFactory(), UserFactory()
        load_requests(owner, count=ROWS, newest=now)
        load_requests(other, count=3_000, newest=now)
        maria = ContactFactory(
            owner=owner,
            first_name="Maria",
            last_name="Garcia",
            email="Maria.Garcia@Example.com",
            email_normalized="maria.garcia@example.com",
            phone="+14155550199",
        )
        ReviewRequestFactory(contact=maria)
        # Its settings, as a business that has used the dashboard has (the first page view
        # creates them): the query budget below is a page's, and held only when an earlier
        # test's page view had left them in the cache.
        BusinessSettings.for_owner(owner)
        analyze()
        yield owner
        remove_all()
        User.objects.filter(pk__in=[owner.pk, other.pk]).delete()


@pytest.fixture
def browser(big_owner, db) -> Client:
    client = Client()
    client.force_login(big_owner)
    return client


def indexes_used(queryset) -> set[str]:
    """The indexes the plan reads; fails on a sequential scan of a big table."""
    plan = json.loads(queryset.explain(format="json"))[0]["Plan"]
    nodes = [node for node, _ in plan_nodes(plan)]
    seq = [n["Relation Name"] for n in nodes if n["Node Type"] == "Seq Scan"]
    assert not BIG_TABLES.intersection(seq), json.dumps(plan, indent=1)
    return {n["Index Name"] for n in nodes if "Index Name" in n}


def names(response) -> list[str]:
    return [item.contact.display_name for item, _ in response.context["rows"]]


NEWEST_FIRST = {"reviews_request_owner_keyset", "reviews_request_recent"}


def test_first_deep_and_newer_pages_start_an_index_at_the_cursor(big_owner, browser):
    """The big owner's pages walk an index in page order (the owner's, or, as they hold most
    rows, the global one) from the cursor: no sort, no scan of the rows before."""
    requests = review_requests_list(access=access_for(big_owner))
    assert NEWEST_FIRST & indexes_used(keyset_slice(requests, size=25))
    deep = browser.get("/").context["page"].older
    for _ in range(3):
        deep = browser.get("/", {"after": deep}).context["page"].older
    for direction in ("after", "before"):
        assert NEWEST_FIRST & indexes_used(keyset_slice(requests, size=25, **{direction: deep}))


def test_a_smaller_owner_reads_only_their_own_index_range(big_owner, db):
    other = User.objects.exclude(pk=big_owner.pk).get(contacts__first_name="First1")  # 3,000
    requests = review_requests_list(access=access_for(other))
    assert "reviews_request_owner_keyset" in indexes_used(keyset_slice(requests, size=25))


def test_a_status_filter_reads_the_owner_status_index(big_owner, db):
    requests = review_requests_list(access=access_for(big_owner), status="failed")
    assert "reviews_request_owner_status" in indexes_used(keyset_slice(requests, size=25))


@pytest.mark.parametrize(
    "search",
    ["maria.garcia@example.COM", "(415) 555-0199", "415.555.0199", "garcia", "Maria Garc"],
)
def test_search_reads_an_index_and_finds_the_contact_typed_any_way(big_owner, browser, search):
    requests = review_requests_list(access=access_for(big_owner), search=search)
    used = indexes_used(keyset_slice(requests, size=25))
    assert used & {
        "reviews_contact_owner_email_unique",
        "reviews_contact_owner_phone_unique",
        "reviews_contact_email_key",
        "reviews_contact_phone_key",
        "reviews_contact_search_trgm",
    }
    assert names(browser.get("/", {"q": search})) == ["Maria Garcia"]


@pytest.mark.parametrize("search", ["maria.garcia@example.COM", "(415) 555-0199"])
def test_a_whole_address_reads_a_btree_key(big_owner, search):
    """Not the trigram index: an equality there intersects the posting lists of every trigram
    of the address, which grow with the table."""
    requests = review_requests_list(access=access_for(big_owner), search=search)
    for queryset in (keyset_slice(requests, size=25), requests.order_by()[:1001]):
        plan = json.loads(queryset.explain(format="json"))[0]["Plan"]
        assert index_access_methods(plan, "reviews_contact") == {"btree"}, plan


def test_a_page_costs_the_same_few_queries_at_any_depth(
    big_owner, browser, django_assert_max_num_queries
):
    with django_assert_max_num_queries(12) as first:
        page = browser.get("/").context["page"]
    with django_assert_max_num_queries(len(first)):
        browser.get("/", {"after": page.older})
    html = browser.get("/").content.decode()
    assert "1,000+ requests." in html
