"""``/api/<platform>/hooks``: subscribe (201 with the secret, once), list, unsubscribe (204);
another owner's hook is a 404; scopes, bad input and unsafe targets are refused in the one
error shape."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from events.models import WebhookSubscription
from events.services import webhook_subscription_create
from tests.support.oauth import issue_tokens

pytestmark = pytest.mark.django_db

HOOKS = "/api/zapier/hooks"
TARGET = "https://93.184.216.34/hooks/catch"  # a public address literal: no DNS, never called


def client_for(owner, scope: str = "read write") -> APIClient:
    access, _ = issue_tokens(owner, scope=scope)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
    return client


def test_subscribe_returns_the_hook_and_its_secret_once(api):
    response = api.post(
        HOOKS, {"target_url": TARGET, "event": "review_request.clicked"}, format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == {"id", "event", "target_url", "secret", "created_at", "location_id"}
    assert body["location_id"] is None
    subscription = WebhookSubscription.objects.get(pk=body["id"])
    assert subscription.owner == api.owner
    assert (body["event"], body["target_url"]) == ("review_request.clicked", TARGET)
    assert body["secret"].startswith("whsec_") and body["secret"] == subscription.secret
    assert body["created_at"].endswith("Z")

    listed = api.get(HOOKS)
    assert listed.status_code == 200
    assert listed.json() == {
        "results": [
            {
                "id": body["id"],
                "event": "review_request.clicked",
                "target_url": TARGET,
                "created_at": body["created_at"],
                "active": True,
                "disabled_at": None,
                "location_id": None,
            }
        ],
        "next": None,
    }
    assert "secret" not in listed.content.decode()


def test_unsubscribe_is_204_then_404(api):
    hook = webhook_subscription_create(
        owner=api.owner, event="contact.opted_out", target_url=TARGET
    )
    assert api.delete(f"{HOOKS}/{hook.pk}").status_code == 204
    assert not WebhookSubscription.objects.exists()
    again = api.delete(f"{HOOKS}/{hook.pk}")
    assert again.status_code == 404 and again.json()["error"] == "not_found"
    assert api.delete(f"{HOOKS}/not-a-uuid").status_code == 404


def test_another_owners_hook_is_a_404_and_not_listed(api, other_owner):
    theirs = webhook_subscription_create(
        owner=other_owner, event="feedback.received", target_url=TARGET
    )
    response = api.delete(f"{HOOKS}/{theirs.pk}")
    assert response.status_code == 404 and response.json()["error"] == "not_found"
    assert WebhookSubscription.objects.filter(pk=theirs.pk).exists()
    assert api.get(HOOKS).json() == {"results": [], "next": None}


def test_read_scope_lists_but_cannot_subscribe_or_unsubscribe(owner):
    hook = webhook_subscription_create(owner=owner, event="feedback.received", target_url=TARGET)
    reader = client_for(owner, scope="read")
    assert reader.get(HOOKS).status_code == 200
    refused = reader.post(HOOKS, {"target_url": TARGET, "event": "feedback.received"}, "json")
    assert refused.status_code == 403 and refused.json()["error"] == "insufficient_scope"
    assert reader.delete(f"{HOOKS}/{hook.pk}").status_code == 403
    assert client_for(owner, scope="write").get(HOOKS).status_code == 403


def test_no_token_is_a_401(db):
    response = APIClient().get(HOOKS)
    assert response.status_code == 401 and response.json()["error"] == "unauthorized"


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"target_url": TARGET, "event": "review.clicked"}, "event", "is not a valid choice"),
        ({"target_url": TARGET}, "event", "required"),
        ({"event": "feedback.received"}, "target_url", "required"),
        (
            {"target_url": "http://93.184.216.34/h", "event": "feedback.received"},
            "target_url",
            "must be an https:// URL",
        ),
        (
            {"target_url": "https://127.0.0.1/h", "event": "feedback.received"},
            "target_url",
            "private or reserved",
        ),
        (
            {"target_url": "https://169.254.169.254/latest", "event": "feedback.received"},
            "target_url",
            "private or reserved",
        ),
    ],
)
def test_bad_input_and_unsafe_targets_are_400_and_nothing_is_saved(api, body, field, words):
    response = api.post(HOOKS, body, format="json")
    assert response.status_code == 400
    error = response.json()
    assert error["error"] == "invalid_request"
    assert words in " ".join(error["fields"][field]) and words in error["error_description"]
    assert not WebhookSubscription.objects.exists()


def test_a_body_that_is_not_an_object_is_a_400(api):
    response = api.post(HOOKS, ["x"], format="json")
    assert response.status_code == 400 and response.json()["error"] == "invalid_request"


def test_an_unknown_field_is_a_400_naming_it_and_subscribes_nothing(api):
    response = api.post(
        HOOKS,
        {"target_url": TARGET, "event": "review_request.clicked", "fields": {}},
        format="json",
    )
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == "invalid_request" and "fields" in body["error_description"]
    assert not WebhookSubscription.objects.exists()
