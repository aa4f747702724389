"""Every API error is ``{error, error_description}`` with the right status."""

from __future__ import annotations

import pytest

from tests.support.oauth import issue_tokens

pytestmark = [pytest.mark.urls("tests.support.error_urls"), pytest.mark.django_db]


def test_validation_error_names_each_field_in_description_and_fields(api_client):
    response = api_client.post("/api/validate", {"email": "nope", "delay_hours": -1}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid_request"
    assert "email:" in body["error_description"]
    assert "delay_hours:" in body["error_description"]
    assert set(body["fields"]) == {"email", "delay_hours"}


def test_malformed_json_is_invalid_request(api_client):
    response = api_client.post("/api/validate", "{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


def test_wrong_media_type_is_415(api_client):
    response = api_client.post("/api/validate", "a=b", content_type="text/plain")
    assert response.status_code == 415
    assert response.json()["error"] == "unsupported_media_type"


def test_missing_or_bad_token_is_401_with_bearer_challenge(api_client):
    missing = api_client.post("/api/write")
    api_client.credentials(HTTP_AUTHORIZATION="Bearer not-a-token")
    bad = api_client.post("/api/write")
    for response in (missing, bad):
        assert response.status_code == 401
        assert response.json()["error"] == "unauthorized"
        assert response["WWW-Authenticate"].startswith("Bearer")


def test_token_without_the_scope_is_403_insufficient_scope(api_client, owner):
    access, _ = issue_tokens(owner, scope="read")
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
    response = api_client.post("/api/write")
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_scope"


def test_token_with_the_scope_passes(api):
    assert api.post("/api/write").status_code == 200


def test_method_not_allowed_is_405(api_client):
    response = api_client.get("/api/validate")
    assert response.status_code == 405
    assert response.json()["error"] == "method_not_allowed"


def test_api_error_keeps_its_code_and_extra_fields(api_client):
    response = api_client.get("/api/conflict")
    assert response.status_code == 409
    assert response.json() == {
        "error": "idempotency_in_progress",
        "error_description": "Still running.",
        "retry_after": 5,
    }
