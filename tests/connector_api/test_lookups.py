"""Locations and members in the connector API: GET /locations, ``location_id`` on send, reads,
cancel, the contact lookup and hooks, a member's token reaching only their locations (everything
else a 404), a viewer's writes a 403, ``/me``'s role and the fields' location dropdown."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from rest_framework.test import APIClient

from accounts.models import Role
from events.models import Event, WebhookDelivery, WebhookSubscription
from events.services import webhook_subscription_create
from reviews.models import Contact, ReviewRequest
from reviews.services import contact_add, review_request_cancel
from tests.factories import LocationFactory, ReviewSiteFactory, UserFactory, first_location
from tests.support.contacts import contact_input
from tests.support.oauth import issue_tokens

pytestmark = pytest.mark.django_db

BASE = "/api/zapier"
SEND = f"{BASE}/send-review-request"
START = datetime(2026, 6, 10, 16, 0, tzinfo=UTC)
TARGET = "https://93.184.216.34/hooks/catch"


@pytest.fixture(autouse=True)
def now(time_machine):
    time_machine.move_to(START, tick=False)
    return START


def client_of(user) -> APIClient:
    access, _ = issue_tokens(user, scope="read write")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
    return client


@pytest.fixture
def account():
    """An owner with Downtown (the default), Uptown and Airport, each with a review site; a
    manager of Uptown and Airport, a manager of Downtown and Uptown, a viewer of Uptown."""
    owner = UserFactory(business_name="Acme Plumbing")
    downtown = first_location(owner, name="Downtown")
    uptown = LocationFactory(account=owner, name="Uptown", time_zone="America/Chicago")
    airport = LocationFactory(account=owner, name="Airport")
    for location in (downtown, uptown, airport):
        ReviewSiteFactory(owner=owner, location=location)
    manager = UserFactory(account=owner, role=Role.MANAGER, email="manager@example.com")
    manager.locations.set([uptown, airport])
    default_manager = UserFactory(account=owner, role=Role.MANAGER)
    default_manager.locations.set([downtown, uptown])
    viewer = UserFactory(account=owner, role=Role.VIEWER, email="viewer@example.com")
    viewer.locations.set([uptown])
    return {
        "owner": owner,
        "downtown": downtown,
        "uptown": uptown,
        "airport": airport,
        "manager": manager,
        "default_manager": default_manager,
        "viewer": viewer,
    }


def request_at(owner, location, email: str) -> ReviewRequest:
    data = contact_input(owner, {"email": email, "first_name": "Jane"})
    return contact_add(owner=owner, data=data, location_id=location.pk).review_request


# --- GET /locations and /me ---------------------------------------------------------------------


def test_locations_lists_every_location_for_the_owner_and_their_own_for_a_member(account):
    owner_body = client_of(account["owner"]).get(f"{BASE}/locations").json()
    assert owner_body == {
        "results": [
            {"id": str(loc.pk), "name": loc.name, "time_zone": loc.time_zone}
            for loc in (account["downtown"], account["uptown"], account["airport"])
        ],
        "next": None,
    }
    member = client_of(account["manager"]).get(f"{BASE}/locations").json()
    assert [r["name"] for r in member["results"]] == ["Uptown", "Airport"]


def test_me_is_the_tokens_user_with_the_accounts_business_and_their_role(account):
    me = client_of(account["viewer"]).get(f"{BASE}/me").json()
    assert me == {
        "id": str(account["viewer"].pk),
        "email": "viewer@example.com",
        "business_name": "Acme Plumbing",
        "role": "viewer",
    }
    assert client_of(account["owner"]).get(f"{BASE}/me").json()["role"] == "owner"


# --- send-review-request ------------------------------------------------------------------------


def test_send_at_a_given_location_records_it_and_answers_it(account):
    uptown = account["uptown"]
    response = client_of(account["owner"]).post(
        SEND, {"email": "a@example.com", "location_id": str(uptown.pk)}, format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["location_id"], body["location_name"]) == (str(uptown.pk), "Uptown")
    assert ReviewRequest.objects.get(pk=body["id"]).location == uptown


def test_send_without_a_location_goes_to_the_default_or_the_members_only_one(account):
    owner = client_of(account["owner"]).post(SEND, {"email": "a@example.com"}, format="json")
    assert owner.json()["location_name"] == "Downtown"
    # A member of several locations, the default one of them: the default.
    default = client_of(account["default_manager"]).post(
        SEND, {"email": "b@example.com"}, format="json"
    )
    assert default.status_code == 201 and default.json()["location_name"] == "Downtown"
    # A member of one location: that one.
    account["manager"].locations.set([account["airport"]])
    only = client_of(account["manager"]).post(SEND, {"email": "c@example.com"}, format="json")
    assert only.status_code == 201 and only.json()["location_name"] == "Airport"


def test_a_member_who_may_not_act_at_the_default_must_name_a_location(account):
    response = client_of(account["manager"]).post(SEND, {"email": "a@example.com"}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid_request"
    assert "location_id" in body["fields"] and "location_id" in body["error_description"]
    assert not Contact.objects.exists() and not ReviewRequest.objects.exists()


@pytest.mark.parametrize("who", ["owner", "manager"])
@pytest.mark.parametrize("value", ["elsewhere", "not-a-uuid", "downtown_for_manager"])
def test_a_location_that_is_not_the_users_is_a_400_naming_it_and_creates_nothing(
    account, who, value
):
    if value == "elsewhere":
        location_id = str(LocationFactory().pk)  # another account's
    elif value == "not-a-uuid":
        location_id = "not-a-uuid"
    else:
        location_id = str(account["downtown"].pk)
        if who == "owner":
            location_id = str(LocationFactory().pk)
    response = client_of(account[who]).post(
        SEND, {"email": "a@example.com", "location_id": location_id}, format="json"
    )
    assert response.status_code == 400, response.content
    assert response.json()["error"] == "invalid_request"
    assert "location_id" in response.json()["fields"]
    assert not Contact.objects.exists() and not ReviewRequest.objects.exists()


def test_a_viewers_writes_are_a_403_forbidden(account):
    viewer = client_of(account["viewer"])
    sent = viewer.post(SEND, {"email": "a@example.com"}, format="json")
    assert sent.status_code == 403 and sent.json()["error"] == "forbidden"
    request = request_at(account["owner"], account["uptown"], "b@example.com")
    cancel = viewer.post(f"{BASE}/review-requests/{request.pk}/cancel")
    assert cancel.status_code == 403 and cancel.json()["error"] == "forbidden"
    request.refresh_from_db()
    assert request.is_active
    assert viewer.get(f"{BASE}/review-requests/{request.pk}").status_code == 200


def test_the_idempotency_key_and_the_rate_limit_stay_per_account(account, settings):
    key = {"HTTP_IDEMPOTENCY_KEY": "order-1"}
    body = {"email": "a@example.com", "location_id": str(account["uptown"].pk)}
    first = client_of(account["owner"]).post(SEND, body, format="json", **key)
    again = client_of(account["manager"]).post(SEND, body, format="json", **key)
    assert first.status_code == 201 and again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    limit = int(first["X-RateLimit-Limit"])
    assert int(again["X-RateLimit-Remaining"]) == limit - 2


# --- reads, cancel, contacts --------------------------------------------------------------------


def test_a_members_token_reaches_only_their_locations_everything_else_is_a_404(account):
    owner = account["owner"]
    downtown = request_at(owner, account["downtown"], "d@example.com")
    uptown = request_at(owner, account["uptown"], "u@example.com")
    manager = client_of(account["manager"])
    listed = manager.get(f"{BASE}/review-requests").json()["results"]
    assert [r["id"] for r in listed] == [str(uptown.pk)]
    assert listed[0]["location_id"] == str(account["uptown"].pk)
    hidden = manager.get(f"{BASE}/review-requests/{downtown.pk}")
    missing = manager.get(f"{BASE}/review-requests/{LocationFactory().pk}")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json()
    cancel = manager.post(f"{BASE}/review-requests/{downtown.pk}/cancel")
    assert cancel.status_code == 404
    downtown.refresh_from_db()
    assert downtown.is_active
    assert manager.post(f"{BASE}/review-requests/{uptown.pk}/cancel").status_code == 200
    assert manager.get(f"{BASE}/contacts", {"email": "d@example.com"}).json()["results"] == []
    [found] = manager.get(f"{BASE}/contacts", {"email": "u@example.com"}).json()["results"]
    assert found["latest_review_request"]["id"] == str(uptown.pk)


def test_a_request_without_a_location_is_the_default_locations(account):
    owner = account["owner"]
    old = request_at(owner, account["downtown"], "old@example.com")
    ReviewRequest.objects.filter(pk=old.pk).update(location=None)
    item = client_of(owner).get(f"{BASE}/review-requests/{old.pk}").json()
    assert (item["location_id"], item["location_name"]) == (
        str(account["downtown"].pk),
        "Downtown",
    )
    assert (
        client_of(account["default_manager"]).get(f"{BASE}/review-requests/{old.pk}").status_code
        == 200
    )
    assert client_of(account["manager"]).get(f"{BASE}/review-requests/{old.pk}").status_code == 404


def test_reads_filter_by_location_id_and_refuse_one_not_reached(account):
    owner = account["owner"]
    request_at(owner, account["downtown"], "d@example.com")
    uptown = request_at(owner, account["uptown"], "u@example.com")
    request_at(owner, account["uptown"], "d@example.com")  # Jane asked at Uptown too
    client = client_of(owner)
    listed = client.get(f"{BASE}/review-requests", {"location_id": str(account["uptown"].pk)})
    assert {r["location_name"] for r in listed.json()["results"]} == {"Uptown"}
    assert str(uptown.pk) in {r["id"] for r in listed.json()["results"]}
    found = client.get(
        f"{BASE}/contacts",
        {"email": "d@example.com", "location_id": str(account["airport"].pk)},
    )
    assert found.json()["results"] == []
    [at_uptown] = client.get(
        f"{BASE}/contacts", {"email": "d@example.com", "location_id": str(account["uptown"].pk)}
    ).json()["results"]
    assert at_uptown["latest_review_request"]["location_name"] == "Uptown"
    refused = client_of(account["manager"]).get(
        f"{BASE}/review-requests", {"location_id": str(account["downtown"].pk)}
    )
    assert refused.status_code == 400 and "location_id" in refused.json()["fields"]


# --- fields -------------------------------------------------------------------------------------


def test_fields_offer_location_id_as_a_dropdown_only_with_several_locations(account):
    fields = client_of(account["owner"]).get(f"{SEND}/fields").json()["fields"]
    [location] = [f for f in fields if f["key"] == "location_id"]
    assert location["dynamic"] == "locations.id.name"
    assert location["required"] is False
    account["manager"].locations.set([account["uptown"]])
    one = client_of(account["manager"]).get(f"{SEND}/fields").json()["fields"]
    assert "location_id" not in {f["key"] for f in one}


def test_a_single_location_business_gets_no_location_field(api):
    fields = api.get(f"{SEND}/fields").json()["fields"]
    assert "location_id" not in {f["key"] for f in fields}


# --- hooks and events ---------------------------------------------------------------------------


def test_a_members_hooks_are_their_own_and_deliver_only_their_locations_events(account):
    owner, manager = account["owner"], account["manager"]
    mine = client_of(manager).post(
        f"{BASE}/hooks", {"target_url": TARGET, "event": "review_request.cancelled"}, format="json"
    )
    assert mine.status_code == 201, mine.content
    theirs = webhook_subscription_create(
        owner=owner, event="review_request.cancelled", target_url=TARGET
    )
    listed = client_of(manager).get(f"{BASE}/hooks").json()["results"]
    assert [h["id"] for h in listed] == [mine.json()["id"]]
    assert client_of(manager).delete(f"{BASE}/hooks/{theirs.pk}").status_code == 404
    assert len(client_of(owner).get(f"{BASE}/hooks").json()["results"]) == 2

    downtown = request_at(owner, account["downtown"], "d@example.com")
    uptown = request_at(owner, account["uptown"], "u@example.com")
    review_request_cancel(review_request=downtown, detail="test")
    review_request_cancel(review_request=uptown, detail="test")
    delivered = {
        (str(d.subscription_id), d.event.data["id"], d.event.data["location_id"])
        for d in WebhookDelivery.objects.select_related("event")
    }
    assert delivered == {
        (str(theirs.pk), str(downtown.pk), str(account["downtown"].pk)),
        (str(theirs.pk), str(uptown.pk), str(account["uptown"].pk)),
        (mine.json()["id"], str(uptown.pk), str(account["uptown"].pk)),
    }


def test_a_hook_with_a_location_id_receives_only_that_locations_events(account):
    owner = account["owner"]
    client = client_of(owner)
    hook = client.post(
        f"{BASE}/hooks",
        {
            "target_url": TARGET,
            "event": "review_request.cancelled",
            "location_id": str(account["airport"].pk),
        },
        format="json",
    )
    assert hook.status_code == 201 and hook.json()["location_id"] == str(account["airport"].pk)
    review_request_cancel(
        review_request=request_at(owner, account["downtown"], "d@example.com"), detail="x"
    )
    airport = request_at(owner, account["airport"], "a@example.com")
    review_request_cancel(review_request=airport, detail="x")
    assert [e.data["id"] for e in Event.objects.all()] == [str(airport.pk)]
    refused = client_of(account["manager"]).post(
        f"{BASE}/hooks",
        {
            "target_url": TARGET,
            "event": "review_request.cancelled",
            "location_id": str(account["downtown"].pk),
        },
        format="json",
    )
    assert refused.status_code == 400 and "location_id" in refused.json()["fields"]
    assert WebhookSubscription.objects.count() == 1


def test_a_members_list_costs_the_same_queries_for_one_request_or_many(account):
    """The location of each item comes with it (no query per request, NULL ones included)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    owner = account["owner"]
    manager = client_of(account["default_manager"])
    request_at(owner, account["downtown"], "first@example.com")
    manager.get(f"{BASE}/me")  # the token is then cached, as on every call after the first
    with CaptureQueriesContext(connection) as one:
        assert len(manager.get(f"{BASE}/review-requests").json()["results"]) == 1
    for n in range(3):
        made = request_at(owner, account["uptown"], f"u{n}@example.com")
    ReviewRequest.objects.filter(pk=made.pk).update(location=None)  # the default's
    with CaptureQueriesContext(connection) as many:
        assert len(manager.get(f"{BASE}/review-requests").json()["results"]) == 4
    assert len(many) == len(one) <= 5  # counter, member, their locations, page, the default
