"""The OpenAPI schema (connector_api.openapi): generated from the code, committed, served, and
complete."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.views import APIView

from core.ratelimit import RateLimitedView

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "docs" / "openapi.yaml"


def committed() -> dict:
    return yaml.safe_load(COMMITTED.read_text())


def test_the_committed_schema_is_what_the_code_generates(settings, tmp_path):
    # The defaults `make schema` uses; --fail-on-warn: any warning (an unresolvable field, a
    # name clash) fails too.
    settings.RATE_LIMIT_PER_HOUR = 5000
    generated = tmp_path / "openapi.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(generated))
    assert generated.read_text() == COMMITTED.read_text(), (
        "docs/openapi.yaml is out of date: run `make schema` and commit it"
    )


@pytest.mark.django_db
def test_the_schema_is_served_as_yaml_and_json(client):
    as_yaml = client.get("/api/schema/")
    assert as_yaml.status_code == 200
    assert yaml.safe_load(as_yaml.content)["paths"] == committed()["paths"]
    as_json = client.get("/api/schema/?format=json")
    assert as_json.status_code == 200
    assert as_json.json()["paths"] == committed()["paths"]


def _api_views(resolver: URLResolver | None = None, prefix: str = ""):
    for entry in (resolver or get_resolver()).url_patterns:
        pattern = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from _api_views(entry, pattern)
        elif isinstance(entry, URLPattern):
            yield pattern, getattr(entry.callback, "view_class", None)


def test_every_api_endpoint_is_rate_limited_where_its_caller_is_known():
    views = {(pattern, cls) for pattern, cls in _api_views() if pattern.startswith("api/")}
    assert views
    for pattern, cls in views:
        if cls is not None and issubclass(cls, APIView) and pattern.startswith("api/<platform"):
            # Bearer-token endpoints: counted per owner, once the token is authenticated.
            assert issubclass(cls, RateLimitedView), pattern
        if pattern.endswith(("token", "revoke_token")):
            assert cls.rate_limit_scope == "client", pattern


def test_the_schema_documents_every_endpoint_with_scopes_errors_and_headers():
    schema = committed()
    operations = {
        (path, method): operation
        for path, item in schema["paths"].items()
        for method, operation in item.items()
    }
    assert {(p, m): op["operationId"] for (p, m), op in operations.items()} == {
        ("/api/zapier/me", "get"): "me",
        ("/api/zapier/status", "get"): "status",
        ("/api/zapier/locations", "get"): "locations_list",
        ("/api/zapier/send-review-request", "post"): "send_review_request",
        ("/api/zapier/send-review-request/fields", "get"): "send_review_request_fields",
        ("/api/zapier/review-requests", "get"): "review_requests_list",
        ("/api/zapier/review-requests/{request_id}", "get"): "review_requests_retrieve",
        ("/api/zapier/review-requests/{request_id}/cancel", "post"): "review_requests_cancel",
        ("/api/zapier/contacts", "get"): "contacts_lookup",
        ("/api/oauth/zapier/token", "post"): "token",
        ("/api/oauth/zapier/revoke", "post"): "revoke",
        ("/api/oauth/zapier/revoke_token", "post"): "revoke_token",
        ("/api/zapier/hooks", "get"): "list_hooks",
        ("/api/zapier/hooks", "post"): "subscribe_hook",
        ("/api/zapier/hooks/{hook_id}", "delete"): "unsubscribe_hook",
    }
    scopes = {op["operationId"]: op.get("security") for op in operations.values()}
    assert scopes["me"] == scopes["locations_list"] == [{"oauth2": ["read"]}]
    assert scopes["send_review_request_fields"] == [{"oauth2": ["read"]}]
    assert scopes["send_review_request"] == [{"oauth2": ["write"]}]
    for read in ("review_requests_list", "review_requests_retrieve", "contacts_lookup"):
        assert scopes[read] == [{"oauth2": ["read"]}], read
    assert scopes["review_requests_cancel"] == [{"oauth2": ["write"]}]
    cancel = operations[("/api/zapier/review-requests/{request_id}/cancel", "post")]
    assert {"200", "404", "409"} <= set(cancel["responses"])
    assert "Retry-After" not in cancel["responses"]["409"]["headers"]
    assert scopes["list_hooks"] == [{"oauth2": ["read"]}]
    assert scopes["subscribe_hook"] == scopes["unsubscribe_hook"] == [{"oauth2": ["write"]}]
    assert scopes["status"] == scopes["revoke"] == [{"oauth2": []}]
    flow = schema["components"]["securitySchemes"]["oauth2"]["flows"]["authorizationCode"]
    assert flow["authorizationUrl"] == "/api/oauth/zapier/authorize"
    assert flow["tokenUrl"] == "/api/oauth/zapier/token"
    assert set(flow["scopes"]) == {"read", "write"}

    send = operations[("/api/zapier/send-review-request", "post")]
    assert set(send["responses"]) >= {"200", "201", "400", "401", "403", "409", "413", "422"}
    assert any(p["name"] == "Idempotency-Key" for p in send["parameters"])
    assert "Idempotent-Replayed" in send["responses"]["201"]["headers"]
    body = schema["components"]["schemas"]["ContactRequest"]["properties"]
    assert set(body) == {
        "first_name",
        "last_name",
        "email",
        "mobile_phone_number",
        "company_name",
        "delay_hours",
        "metadata",
        "location_id",
    }
    for operation in operations.values():
        assert {"414", "429", "500"} <= set(operation["responses"]), operation["operationId"]
        # 414 is the web server's own answer (a request line over its limit), before the API.
        assert set(operation["responses"]["414"]["content"]) == {"text/html"}
        for status, response in operation["responses"].items():
            if status == "414":
                continue
            headers = set(response["headers"])
            assert {"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} <= headers
            if status == "429":
                assert "Retry-After" in headers
            if status.startswith(("4", "5")):
                ref = response["content"]["application/json"]["schema"]["$ref"]
                assert ref.rsplit("/", 1)[-1] in {
                    "Error",
                    "ValidationError",
                    "ServerError",
                    "StatusError",
                    "OAuthError",
                }
