"""GET /api/<platform>/contacts?email=|phone=: find a contact as adding one would match it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.factories import UserFactory
from tests.support.portal_data import add_request, opt_out, send_first

pytestmark = pytest.mark.django_db

URL = "/api/zapier/contacts"
START = datetime(2026, 6, 10, 16, 0, tzinfo=UTC)


@pytest.fixture
def now(time_machine):
    time_machine.move_to(START, tick=False)
    return START


def results(response) -> list[dict]:
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["next"] is None
    return body["results"]


def test_an_email_finds_the_contact_in_any_case_with_their_latest_request(api, now):
    request = add_request(
        api.owner,
        first_name="Jane",
        last_name="Smith",
        email="Jane@Example.com",
        company_name="Acme",
    )
    [found] = results(api.get(URL, {"email": "  JANE@example.COM "}))
    assert found == {
        "id": str(request.contact_id),
        "name": "Jane Smith",
        "first_name": "Jane",
        "last_name": "Smith",
        "company_name": "Acme",
        "email": "Jane@Example.com",
        "phone": None,
        "sms_opted_out": False,
        "email_opted_out": False,
        "created_at": "2026-06-10T16:00:00Z",
        "latest_review_request": {
            "id": str(request.id),
            "contact_id": str(request.contact_id),
            "contact_name": "Jane Smith",
            "contact_email": "Jane@Example.com",
            "contact_phone": None,
            "scheduled_for": "2026-06-10T16:00:00Z",
            "status": "scheduled",
            "message": "Review request for Jane Smith scheduled for 2026-06-10 16:00 UTC.",
            "location_id": str(request.location_id),
            "location_name": request.location.name,
        },
    }


@pytest.mark.parametrize(
    "written", ["(415) 555-2671", "415.555.2671", "+1 415 555 2671", "001 415 555 2671"]
)
def test_a_phone_in_any_format_finds_the_contact(api, now, written):
    request = add_request(api.owner, mobile_phone_number="+14155552671")
    [found] = results(api.get(URL, {"phone": written}))
    assert found["id"] == str(request.contact_id)
    assert found["phone"] == "+14155552671"


def test_the_latest_request_is_the_newest_and_opt_outs_show(api, now):
    first = add_request(api.owner, email="jane@example.com", mobile_phone_number="+14155552671")
    send_first(first, at=START)
    opt_out(first, at=START + timedelta(minutes=1), channel="sms")
    [found] = results(api.get(URL, {"phone": "4155552671"}))
    assert found["sms_opted_out"] is True and found["email_opted_out"] is False
    assert found["latest_review_request"]["id"] == str(first.id)
    first.refresh_from_db()
    assert found["latest_review_request"]["status"] == first.status == "opted_out"


def test_both_keys_find_both_contacts_when_they_are_two_people_email_first(api, now):
    by_phone = add_request(api.owner, mobile_phone_number="+14155552671")
    by_email = add_request(api.owner, email="jane@example.com")
    found = results(api.get(URL, {"email": "jane@example.com", "phone": "+14155552671"}))
    assert [c["id"] for c in found] == [str(by_email.contact_id), str(by_phone.contact_id)]


def test_nobody_is_an_empty_list(api, now):
    add_request(api.owner, email="jane@example.com")
    assert results(api.get(URL, {"email": "john@example.com"})) == []
    assert results(api.get(URL, {"phone": "+14155550100"})) == []


def test_another_owners_contact_is_never_found(api, now):
    add_request(UserFactory(), email="jane@example.com", mobile_phone_number="+14155552671")
    assert results(api.get(URL, {"email": "jane@example.com"})) == []
    assert results(api.get(URL, {"phone": "+14155552671"})) == []


@pytest.mark.parametrize(
    ("params", "fields"),
    [
        ({}, {"non_field_errors"}),
        ({"email": " ", "phone": ""}, {"non_field_errors"}),
        ({"email": "not-an-address"}, {"email"}),
        ({"phone": "12"}, {"phone"}),
    ],
)
def test_bad_or_missing_keys_are_a_400(api, now, params, fields):
    response = api.get(URL, params)
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == "invalid_request"
    assert set(body["fields"]) == fields


def test_the_lookup_needs_a_token_with_the_read_scope(api_client, now):
    response = api_client.get(URL, {"email": "jane@example.com"})
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"
