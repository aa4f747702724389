"""Staff see contacts, requests and their messages; nothing is written around the services."""

from __future__ import annotations

import pytest

from reviews.services import contact_add
from tests.support.contacts import contact_input

pytestmark = pytest.mark.django_db


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
