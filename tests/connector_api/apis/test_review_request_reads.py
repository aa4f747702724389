"""GET /api/<platform>/review-requests (list, one with its timeline) and POST .../cancel,
through HTTP with real bearer tokens."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reviews.models import Message, ReviewRequest
from tests.factories import UserFactory
from tests.support.oauth import issue_tokens
from tests.support.portal_data import add_request, click, fail, leave_feedback, send_first

pytestmark = pytest.mark.django_db

LIST = "/api/zapier/review-requests"
START = datetime(2026, 6, 10, 16, 0, tzinfo=UTC)
KEYS = {
    "id",
    "contact_id",
    "contact_name",
    "contact_email",
    "contact_phone",
    "scheduled_for",
    "status",
    "message",
    "location_id",
    "location_name",
}


@pytest.fixture
def now(time_machine):
    time_machine.move_to(START, tick=False)
    return START


def requests_of(
    owner, count: int, *, start: datetime = START, name: str = "jane"
) -> list[ReviewRequest]:
    """``count`` requests of new contacts, created a minute apart, oldest first."""
    return [
        add_request(
            owner,
            created_at=start + timedelta(minutes=n),
            first_name="Jane",
            last_name=f"Doe{n}",
            email=f"{name}{n}@example.com",
        )
        for n in range(count)
    ]


def ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [item["id"] for item in response.json()["results"]]


# --- the list -------------------------------------------------------------------------------------


def test_the_list_is_newest_first_with_the_spec_object_of_each(api, now):
    first, second = requests_of(api.owner, 2)
    response = api.get(LIST)
    body = response.json()
    assert ids(response) == [str(second.id), str(first.id)]
    assert body["next"] is None
    item = body["results"][1]
    assert set(item) == KEYS
    assert item == {
        "id": str(first.id),
        "contact_id": str(first.contact_id),
        "contact_name": "Jane Doe0",
        "contact_email": "jane0@example.com",
        "contact_phone": None,
        "scheduled_for": "2026-06-10T16:00:00Z",
        "status": "scheduled",
        "message": "Review request for Jane Doe0 scheduled for 2026-06-10 16:00 UTC.",
        "location_id": str(first.location_id),
        "location_name": first.location.name,
    }


def test_cursor_pages_walk_every_request_once_even_when_new_ones_arrive(api, now):
    made = requests_of(api.owner, 5)
    newest_first = [str(r.id) for r in reversed(made)]
    first = api.get(LIST, {"limit": 2})
    assert ids(first) == newest_first[:2]
    cursor = first.json()["next"]
    assert cursor
    requests_of(
        api.owner, 1, start=START + timedelta(hours=1), name="new"
    )  # arrives between two pages
    second = api.get(LIST, {"limit": 2, "cursor": cursor})
    assert ids(second) == newest_first[2:4]
    last = api.get(LIST, {"limit": 2, "cursor": second.json()["next"]})
    assert ids(last) == newest_first[4:]
    assert last.json()["next"] is None


def test_requests_created_in_the_same_instant_are_neither_skipped_nor_repeated(api, now):
    made = [
        add_request(api.owner, created_at=START, email=f"same{n}@example.com") for n in range(3)
    ]
    seen, cursor = [], None
    while True:
        response = api.get(LIST, {"limit": 1, **({"cursor": cursor} if cursor else {})})
        seen += ids(response)
        cursor = response.json()["next"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(str(r.id) for r in made)
    assert len(seen) == 3


def test_status_and_since_filter_the_list(api, now, time_machine):
    old, clicked, scheduled = requests_of(api.owner, 3)
    send_first(clicked, at=START + timedelta(minutes=5))
    click(clicked, at=START + timedelta(minutes=6))
    assert ids(api.get(LIST, {"status": "clicked"})) == [str(clicked.id)]
    assert ids(api.get(LIST, {"status": "scheduled"})) == [str(scheduled.id), str(old.id)]

    time_machine.move_to(START + timedelta(hours=2), tick=False)
    fail(old, at=START + timedelta(hours=2), code="21211", error="invalid number")
    since = (START + timedelta(hours=1)).isoformat()
    assert ids(api.get(LIST, {"since": since})) == [str(old.id)]
    assert ids(api.get(LIST, {"since": "2026-06-10T17:00:00Z", "status": "failed"})) == [
        str(old.id)
    ]


def test_the_list_pages_in_a_fixed_number_of_queries(api, now):
    requests_of(api.owner, 3)
    api.get(LIST)  # warm caches (the token's connection, the owner)
    with CaptureQueriesContext(connection) as few:
        api.get(LIST, {"limit": 3})
    requests_of(api.owner, 10, start=START + timedelta(hours=1), name="more")
    with CaptureQueriesContext(connection) as many:
        assert len(ids(api.get(LIST, {"limit": 13}))) == 13
    assert len(many.captured_queries) == len(few.captured_queries)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"status": "lost"}, "status"),
        ({"status": ""}, "status"),
        ({"limit": ""}, "limit"),
        ({"since": "yesterday"}, "since"),
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"cursor": "not-a-cursor"}, "cursor"),
        ({"cursor": "WyJ4IiwgInkiXQ"}, "cursor"),  # valid base64 of ["x", "y"]
    ],
)
def test_bad_parameters_are_a_400_naming_the_parameter(api, now, params, field):
    response = api.get(LIST, params)
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == "invalid_request"
    assert set(body["fields"]) == {field}
    assert f"{field}:" in body["error_description"]


def test_the_list_holds_only_the_owners_requests(api, now):
    mine = requests_of(api.owner, 1)[0]
    requests_of(UserFactory(), 2)
    assert ids(api.get(LIST)) == [str(mine.id)]


# --- one request ----------------------------------------------------------------------------------


def test_one_request_has_the_object_and_its_timeline(api, now):
    request = add_request(api.owner, first_name="Jane", email="jane@example.com")
    send_first(request, at=START + timedelta(minutes=1), delivered=True)
    leave_feedback(request, at=START + timedelta(minutes=3), text="The plumber was late.")
    click(request, at=START + timedelta(minutes=4))
    response = api.get(f"{LIST}/{request.id}")
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {*KEYS, "timeline"}
    assert body["status"] == "clicked"
    kinds = [event["kind"] for event in body["timeline"]]
    assert kinds[:3] == ["added", "sent", "delivered"]
    assert "feedback" in kinds and "clicked" in kinds and kinds[-1] == "ended"
    feedback = next(e for e in body["timeline"] if e["kind"] == "feedback")
    assert feedback == {
        "at": "2026-06-10T16:03:00Z",
        "kind": "feedback",
        "title": "Private feedback",
        "detail": "The plumber was late.",
    }
    assert body["message"].startswith(
        "Review request for Jane ended 2026-06-10 16:04 UTC: clicked."
    )


# --- cancel ---------------------------------------------------------------------------------------


def test_cancel_ends_an_active_request_and_cancels_its_unsent_messages(api, now):
    request = add_request(api.owner, email="jane@example.com", delay_hours=24)
    response = api.post(f"{LIST}/{request.id}/cancel")
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == KEYS
    assert body["id"] == str(request.id) and body["status"] == "cancelled"
    request.refresh_from_db()
    assert request.status == ReviewRequest.Status.CANCELLED
    assert request.ended_reason == ReviewRequest.EndedReason.CANCELLED
    assert set(request.messages.values_list("status", flat=True)) == {Message.Status.CANCELLED}


@pytest.mark.parametrize("ending", ["cancelled", "clicked"])
def test_cancel_of_an_ended_request_is_a_409_saying_why_and_changes_nothing(api, now, ending):
    request = add_request(api.owner, email="jane@example.com", delay_hours=1)
    if ending == "cancelled":
        assert api.post(f"{LIST}/{request.id}/cancel").status_code == 200
    else:
        send_first(request, at=START)
        click(request, at=START + timedelta(minutes=1))
    request.refresh_from_db()
    before = (request.status, request.ended_at, request.updated_at)
    response = api.post(f"{LIST}/{request.id}/cancel")
    assert response.status_code == 409, response.content
    body = response.json()
    assert body["error"] == "already_ended"
    assert f"already ended ({ending}" in body["error_description"]
    assert "Retry-After" not in response
    request.refresh_from_db()
    assert (request.status, request.ended_at, request.updated_at) == before


def test_cancel_needs_the_write_scope(now):
    owner = UserFactory()
    request = add_request(owner, email="jane@example.com", delay_hours=1)
    from rest_framework.test import APIClient

    read_only = APIClient()
    read_only.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_tokens(owner, scope='read')[0]}")
    response = read_only.post(f"{LIST}/{request.id}/cancel")
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_scope"
    assert read_only.get(f"{LIST}/{request.id}").status_code == 200
    request.refresh_from_db()
    assert request.is_active


# --- another owner's ids --------------------------------------------------------------------------


def test_another_owners_request_is_a_404_on_detail(api, now):
    theirs = add_request(UserFactory(), email="them@example.com")
    response = api.get(f"{LIST}/{theirs.id}")
    assert response.status_code == 404
    assert response.json() == {
        "error": "not_found",
        "error_description": "No review request with this id.",
    }


def test_another_owners_request_is_a_404_on_cancel_and_stays_active(api, now):
    theirs = add_request(UserFactory(), email="them@example.com", delay_hours=1)
    response = api.post(f"{LIST}/{theirs.id}/cancel")
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"
    theirs.refresh_from_db()
    assert theirs.is_active


@pytest.mark.parametrize("request_id", ["nope", "00000000-0000-0000-0000-000000000000"])
def test_an_unknown_id_is_the_same_404(api, now, request_id):
    for response in (api.get(f"{LIST}/{request_id}"), api.post(f"{LIST}/{request_id}/cancel")):
        assert response.status_code == 404
        assert response.json()["error_description"] == "No review request with this id."
