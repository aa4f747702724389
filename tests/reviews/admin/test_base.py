"""What the back office's lists share (reviews.admin.base): staff see contacts, requests and their
messages, and nothing is written around the services; search on indexed keys, filters with fixed
choices, counts that do not read the whole table, and the same few queries for any amount of
data."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from core import pagination
from reviews.admin.requests import ReviewRequestAdmin
from reviews.models import Message
from reviews.services import contact_add
from tests.factories import UserFactory
from tests.support.contacts import contact_input
from tests.support.portal_data import add_request, send_first

pytestmark = pytest.mark.django_db

REQUESTS = "/admin/reviews/reviewrequest/"
MESSAGES = "/admin/reviews/message/"
CONTACTS = "/admin/reviews/contact/"


@pytest.fixture
def people(business):
    other = UserFactory(business_name="Other Co", default_region="GB")
    maria = add_request(
        business,
        first_name="Maria",
        last_name="Garcia",
        email="Maria.Garcia@Example.com",
        mobile_phone_number="+14155550199",
    )
    add_request(business, first_name="Oliver", last_name="Smith", email="oliver@example.com")
    add_request(other, first_name="Theo", email="theo@example.com")
    send_first(maria, at=timezone.now())
    return maria


CONTACT_OF = {
    REQUESTS: lambda row: row.contact_id,
    MESSAGES: lambda row: row.review_request.contact_id,
    CONTACTS: lambda row: row.pk,
}


def contacts_found(staff, url, search) -> set:
    rows = staff.get(url, {"q": search}).context["cl"].result_list
    return {CONTACT_OF[url](row) for row in rows}


def shown(response, *names) -> list[str]:
    html = response.content.decode()
    return [name for name in names if name in html]


@pytest.mark.parametrize(
    "search",
    [
        "maria.garcia@EXAMPLE.com",  # the e-mail typed in another case
        "+1 415 555 0199",  # the phone with its country code, spaced
        "555-0199",  # digits of the phone
        "garc",  # part of a name
        "maria garcia",
    ],
)
def test_requests_messages_and_contacts_are_found_by_email_phone_or_name(staff, people, search):
    for url in (REQUESTS, MESSAGES, CONTACTS):
        assert contacts_found(staff, url, search) == {people.contact_id}, url


def test_ids_find_their_rows(staff, people):
    message = people.messages.get(step=0)
    found = staff.get(REQUESTS, {"q": str(people.pk)})
    assert shown(found, "Maria", "Oliver") == ["Maria"]
    for term in (str(message.pk), str(people.pk), message.provider_message_id):
        assert (
            f"/admin/reviews/message/{message.pk}/change/"
            in staff.get(MESSAGES, {"q": term}).content.decode()
        ), term
    assert shown(staff.get(MESSAGES, {"q": "no-such-id"}), "Maria", "Oliver") == []


def test_filters_offer_fixed_choices_and_no_date_drilldown(staff, people):
    page = staff.get(MESSAGES).content.decode()
    assert "?provider=twilio" in page and "?provider=outbox" in page
    assert 'class="xfull"' not in page  # no date hierarchy
    sent = staff.get(MESSAGES, {"provider": "outbox"})
    assert sent.context["cl"].result_count == 1
    since = timezone.now() - timedelta(days=1)
    recent = staff.get(REQUESTS, {"created_at__gte": str(since)})
    assert recent.context["cl"].result_count == 3


def test_a_count_past_the_cap_is_the_planners_estimate(staff, people, monkeypatch):
    monkeypatch.setattr(pagination, "EXACT_COUNT_CAP", 2)
    page = staff.get(REQUESTS)
    paginator = page.context["cl"].paginator
    if connection.vendor == "postgresql":
        assert paginator.count_is_estimate
        assert f"about {paginator.count} review requests" in page.content.decode()
        # Pages of an estimate stop where skipping rows would grow costly.
        monkeypatch.setattr(ReviewRequestAdmin, "list_per_page", 1)
        assert staff.get(REQUESTS, {"p": "2"}).status_code == 200
        monkeypatch.setattr(pagination, "MAX_ESTIMATED_PAGES", 1)
        assert staff.get(REQUESTS).context["cl"].paginator.num_pages == 1
        assert staff.get(REQUESTS, {"p": "2"}).status_code == 302  # Django: "?e=1"
    else:  # no planner to ask: an exact count
        assert not paginator.count_is_estimate and paginator.count == 3
    assert staff.get(REQUESTS, {"q": "garcia"}).context["cl"].result_count == 1


@pytest.mark.parametrize("url", [REQUESTS, MESSAGES, CONTACTS])
def test_a_list_costs_the_same_queries_for_more_rows(
    staff, business, url, django_assert_max_num_queries
):
    add_request(business, email="one@example.com")
    with django_assert_max_num_queries(20) as few:
        staff.get(url)
    for n in range(10):
        add_request(business, email=f"more{n}@example.com")
    assert Message.objects.count() > 10
    with django_assert_max_num_queries(len(few)):
        staff.get(url)


@pytest.fixture
def added(owner):
    return contact_add(
        owner=owner,
        data=contact_input(
            owner,
            {"first_name": "Jane", "email": "jane@example.com", "metadata": {"order": "1001"}},
        ),
    )


def test_staff_see_a_contact_with_its_requests_and_metadata(admin_client, added):
    page = admin_client.get(f"/admin/reviews/contact/{added.contact.pk}/change/")
    assert page.status_code == 200
    assert b"jane@example.com" in page.content
    assert b"&quot;order&quot;: &quot;1001&quot;" in page.content
    assert b"scheduled" in page.content.lower()


def test_staff_see_a_request_with_every_message_row(admin_client, added):
    page = admin_client.get(f"/admin/reviews/reviewrequest/{added.review_request.pk}/change/")
    assert page.status_code == 200
    assert page.content.count(b"planned") >= 2
    assert b"pending" in page.content


def test_contacts_and_requests_cannot_be_added_or_edited_around_add_contact(admin_client, added):
    assert admin_client.get("/admin/reviews/contact/add/").status_code == 403
    assert admin_client.get("/admin/reviews/reviewrequest/add/").status_code == 403
    response = admin_client.post(
        f"/admin/reviews/contact/{added.contact.pk}/change/", {"email": "other@example.com"}
    )
    assert response.status_code == 403
    added.contact.refresh_from_db()
    assert added.contact.email == "jane@example.com"


def test_changelists_load(admin_client, added):
    for model in ("contact", "reviewrequest", "businesssettings"):
        assert admin_client.get(f"/admin/reviews/{model}/").status_code == 200
    assert admin_client.get("/admin/connector_api/idempotencykey/").status_code == 200
