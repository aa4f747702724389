"""The OpenAPI 3 schema (drf-spectacular): shared components, hooks and the OAuth endpoints.

Served at ``/api/schema/`` (docs page ``/api/docs/``) and committed as ``docs/openapi.yaml``
(``make schema`` regenerates it; a test fails when the code and the file disagree).

* Connector endpoints are documented under the default platform's slug (``/api/zapier/...``);
  every slug in ``CONNECTOR_PLATFORMS`` serves the same operations.
* Every response of every operation carries the ``X-RateLimit-*`` and ``X-Request-ID`` headers,
  and 429 (and 409/503) ``Retry-After`` (added by ``postprocess``, so none can be forgotten).
* The token and RFC 7009 revocation endpoints are django-oauth-toolkit views, not DRF views, so
  they are described here by hand (form-encoded bodies).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, NotRequired, TypedDict

from django.conf import settings
from drf_spectacular.contrib.django_oauth_toolkit import DjangoOAuthToolkitScheme
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiExample, extend_schema_field, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request

from connector_api.permissions import TokenHasRequiredScopes
from contact_input.normalize import CONTACT_FIELDS, MAX_DELAY_HOURS, ContactField, FieldKind
from core.openapi import Error

# --- Error bodies (the shared ones are core.openapi's) -----------------------------------------


class StatusError(Error):
    """`GET /status` with an invalid, expired or revoked token."""

    active = serializers.BooleanField(help_text="Always `false`.")


# --- Request and response bodies that serializers do not describe exactly -------------------


def _contact_field_schema(spec: ContactField) -> dict[str, Any]:
    """What the endpoint accepts for one key (``contact_input.normalize`` has the full rules)."""
    if spec.kind == FieldKind.HOURS:
        schema: dict[str, Any] = {
            "oneOf": [
                {"type": "integer", "minimum": 0, "maximum": MAX_DELAY_HOURS},
                {
                    "type": "string",
                    "pattern": "^\\s*[0-9]{0,12}\\s*$",
                    "description": "Digits, as automation platforms send numbers; blank: "
                    "the business's default delay.",
                },
            ],
        }
    elif spec.kind == FieldKind.OBJECT:
        schema = {"type": "object", "additionalProperties": True}
    elif spec.kind == FieldKind.PHONE:
        schema = {
            "oneOf": [
                {"type": "string", "maxLength": spec.max_length},
                {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Digits sent as a JSON number (as spreadsheets and "
                    "automation platforms do): read as the same digits written as text.",
                },
            ],
        }
    else:
        schema = {"type": "string", "maxLength": spec.max_length}
    schema["nullable"] = True
    schema["description"] = spec.help_text
    if spec.placeholder:
        hours = spec.kind == FieldKind.HOURS
        schema["example"] = int(spec.placeholder) if hours else spec.placeholder
    return schema


def _contact_request_serializer() -> type[serializers.Serializer[None]]:
    fields = {
        spec.key: extend_schema_field(_contact_field_schema(spec))(
            type(f"{spec.key}_field", (serializers.Field,), {})
        )(required=False)
        for spec in CONTACT_FIELDS
    }
    fields["location_id"] = extend_schema_field(
        {
            "type": "string",
            "format": "uuid",
            "nullable": True,
            "description": "Where the request is sent from: an `id` from GET /locations. "
            "Absent: the user's only location, else the account's default location (a 400 "
            "naming `location_id` for a member who may not act there). Not one of the "
            "user's locations: a 400 naming `location_id`, nothing created.",
        }
    )(type("location_id_field", (serializers.Field,), {}))(required=False)
    return type(
        "ContactRequest",
        (serializers.Serializer,),
        {
            "__doc__": "A contact. At least one of `email` and `mobile_phone_number` is "
            'required (not blank). Blank or null values mean "not given"; unknown keys are '
            "ignored. Each invalid value is named in the 400's `fields`.",
            **fields,
        },
    )


ContactRequest = _contact_request_serializer()


# Documents the one review-request object (reviews.representations.review_request_object builds
# every body: the API's answers and the events' data); it never renders anything itself.
@extend_schema_serializer(component_name="ReviewRequest")
class ReviewRequestSerializer(serializers.Serializer[dict[str, Any]]):
    """The review request as the API contract names it (docs/api.md): the answer of a create
    and of a cancel, an item of the list, the top of one request's detail, a contact's latest."""

    id = serializers.CharField()
    contact_id = serializers.CharField()
    contact_name = serializers.CharField(allow_blank=True)
    contact_email = serializers.CharField(allow_null=True)
    contact_phone = serializers.CharField(allow_null=True)
    scheduled_for = serializers.CharField()
    status = serializers.CharField()
    message = serializers.CharField()
    location_id = serializers.UUIDField(
        allow_null=True,
        help_text="Where the request is (a request stored without one is at the account's "
        "default location); `null` only in an account without locations.",
    )
    location_name = serializers.CharField(allow_null=True)


class InputFieldSpec(TypedDict):
    """One Zapier input field (``PlainInputFieldSchema``) as the fields endpoint answers it."""

    key: str
    label: str
    type: Literal["string", "integer"]
    required: bool
    helpText: str  # Zapier's key
    placeholder: NotRequired[str]
    default: NotRequired[str]
    dict: NotRequired[bool]
    dynamic: NotRequired[str]


class InputFieldsBody(TypedDict):
    fields: list[InputFieldSpec]


# DRF's metaclass takes declared fields out of the class body, so a field may bear the name of a
# serializer attribute (``label``, ``required``, ``fields``); the stubs see a clash.
class InputField(serializers.Serializer[InputFieldSpec]):
    """One Zapier input field (`PlainInputFieldSchema`)."""

    key = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # a field, not Field.label
    type = serializers.ChoiceField(choices=["string", "integer"])
    required = serializers.BooleanField()  # type: ignore[assignment]  # not Field.required
    helpText = serializers.CharField()  # Zapier's key
    placeholder = serializers.CharField(required=False)
    default = serializers.CharField(
        required=False, help_text="On `delay_hours`: the business's default delay."
    )
    dict = serializers.BooleanField(required=False, help_text="On `metadata`: key/value input.")
    dynamic = serializers.CharField(
        required=False,
        help_text="On `location_id`: `locations.id.name`, a dropdown of the user's locations "
        "(Zapier's hidden `locations` trigger).",
    )


class InputFieldsResponse(serializers.Serializer[InputFieldsBody]):
    fields = InputField(many=True)  # type: ignore[assignment]  # a field, not .fields


# --- Authentication ---------------------------------------------------------------------------


class OAuth2Scheme(DjangoOAuthToolkitScheme):  # type: ignore[no-untyped-call]  # registry hook
    """Our bearer-token authentication (a subclass of DOT's): the `oauth2` security scheme with
    the authorization code flow, and each operation's scopes from its permission class.

    Subclassing registers the extension (drf-spectacular's ``__init_subclass__``, which is not
    annotated: hence the ``type: ignore`` above)."""

    target_class = "oauth_provider.authentication.OAuth2Authentication"

    def get_security_requirement(self, auto_schema: AutoSchema) -> dict[str, list[str]]:
        view = auto_schema.view
        for permission in view.get_permissions():
            if isinstance(permission, TokenHasRequiredScopes):
                return {self.name: permission.get_scopes(view.request, view)}
        return {self.name: []}  # any valid token


# --- Hooks --------------------------------------------------------------------------------------


# What drf-spectacular hands a preprocessing hook: (path, path regex, method, view callback).
Endpoint = tuple[str, str, str, Callable[..., Any]]


def preprocess_platform_paths(endpoints: list[Endpoint]) -> list[Endpoint]:
    """Document ``/api/{platform}/...`` as the default platform's concrete paths."""
    slug = settings.CONNECTOR_PLATFORMS[0]
    return [
        (path.replace("{platform}", slug), path_regex, method, callback)
        for path, path_regex, method, callback in endpoints
        if path.startswith("/api/")
    ]


DESCRIPTION = """\
Add contacts to a business and let the service send each one review request (SMS or e-mail)
and its follow-ups. Connections use OAuth 2.0 (authorization code, optional PKCE `S256`).

**Platform slug.** Paths are shown for Zapier (`/api/{{slug}}/...` with `{{slug}}` = `{default}`);
every platform slug the service is configured for (`CONNECTOR_PLATFORMS`) serves the same
operations under its own prefix, including `/api/oauth/{{slug}}/...`.

**Rate limits.** {limit} requests per hour per user (all of a user's tokens together), in a
fixed window that starts with the first request. Every response carries `X-RateLimit-Limit`,
`X-RateLimit-Remaining` and `X-RateLimit-Reset` (Unix epoch seconds at which the window ends).
Request {limit_plus_one} of a window is answered `429 rate_limit_exceeded` with an integer
`Retry-After` (seconds); it was not processed, so retrying it is always safe. Requests without
a valid token are counted per client IP; the token and `revoke_token` endpoints count only failed
client authentications, per client id and per network, and never refuse the right secret.

**Errors.** Every error is JSON `{{"error": code, "error_description": text}}`: 400
`invalid_request` (with `fields`), 401 `unauthorized` (+ `WWW-Authenticate: Bearer`: refresh
the token), 403 `insufficient_scope`, 404 `not_found`, 405 `method_not_allowed`, 409/422
idempotency conflicts, 413 `request_too_large`, 415 `unsupported_media_type`, 429
`rate_limit_exceeded`, 500 `server_error` (with `request_id`, also in `X-Request-ID`), 503
`service_unavailable` (+ `Retry-After`: the database is briefly down; retry). The OAuth
endpoints use the OAuth codes (`invalid_client`, `invalid_grant`, ...) in the same shape.

**Idempotency.** `POST send-review-request` accepts an `Idempotency-Key` header: a retry with the
same key and body gets the first response again (`Idempotent-Replayed: true`).
"""

_HEADERS: dict[str, dict[str, Any]] = {
    "X-RateLimit-Limit": {
        "description": "Requests allowed in the rate-limit window (one hour).",
        "schema": {"type": "integer", "minimum": 1},
    },
    "X-RateLimit-Remaining": {
        "description": "Requests left in the current window.",
        "schema": {"type": "integer", "minimum": 0},
    },
    "X-RateLimit-Reset": {
        "description": "When the current window ends, in Unix epoch seconds.",
        "schema": {"type": "integer", "minimum": 0},
    },
    "X-Request-ID": {
        "description": "This request's id, in every log line written while handling it.",
        "schema": {"type": "string"},
    },
    "Retry-After": {
        "description": "Seconds to wait before retrying (an integer).",
        "schema": {"type": "integer", "minimum": 1},
    },
}
_EVERY_RESPONSE = (
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
    "X-Request-ID",
)
_RETRY_AFTER_STATUSES = {"409", "429", "503"}

# Answered by gunicorn before the request reaches the API (so without its headers or error
# shape): a request line (method, path and query) over its 4 KB limit.
_URI_TOO_LONG = {
    "description": "The request line (method, path and query string) is longer than the web "
    "server accepts (4 KB). Answered by the server in front of the API, as HTML and without the "
    "API's headers; nothing was done.",
    "content": {"text/html": {"schema": {"type": "string"}}},
}


def _header_ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/headers/{name}"}


def postprocess(
    result: dict[str, Any], generator: SchemaGenerator, request: Request | None, public: bool
) -> dict[str, Any]:
    """Description, the OAuth endpoints, and the headers every response carries."""
    limit = settings.RATE_LIMIT_PER_HOUR
    result["info"]["description"] = DESCRIPTION.format(
        default=settings.CONNECTOR_PLATFORMS[0], limit=limit, limit_plus_one=limit + 1
    )
    components = result.setdefault("components", {})
    components["headers"] = {
        name: {**header, "required": True} for name, header in _HEADERS.items()
    }
    schemas = components.setdefault("schemas", {})
    schemas.update(_OAUTH_SCHEMAS)
    result["paths"].update(_oauth_paths(settings.CONNECTOR_PLATFORMS[0]))
    result["paths"] = dict(sorted(result["paths"].items()))
    for path_item in result["paths"].values():
        for operation in path_item.values():
            for status, response in operation.get("responses", {}).items():
                headers = response.setdefault("headers", {})
                for name in _EVERY_RESPONSE:
                    headers[name] = _header_ref(name)
                # A 409 that is not an idempotency conflict (a cancel of an ended request)
                # is final: no Retry-After.
                retried = status != "409" or "idempotency_in_progress" in response["description"]
                if status in _RETRY_AFTER_STATUSES and retried:
                    headers["Retry-After"] = _header_ref("Retry-After")
                response["headers"] = dict(sorted(headers.items()))
            responses = operation.setdefault("responses", {})
            responses["414"] = _URI_TOO_LONG
            operation["responses"] = dict(sorted(responses.items()))
    return result


# --- The OAuth endpoints (django-oauth-toolkit views) ------------------------------------------

# Form parameters may hold any character but NUL, which PostgreSQL cannot compare: a NUL in a
# parameter or in HTTP Basic credentials is 400 invalid_request.
NO_NUL = "^[^\\u0000]*$"

_OAUTH_SCHEMAS: dict[str, Any] = {
    "OAuthError": {
        "type": "object",
        "description": "An OAuth 2.0 error (RFC 6749 §5.2) in the API's one error shape.",
        "properties": {
            "error": {
                "type": "string",
                "description": "`invalid_request`, `invalid_client`, `invalid_grant`, "
                "`unauthorized_client`, `unsupported_grant_type`, `invalid_scope`, "
                "`unsupported_token_type`, `unsupported_media_type`, `rate_limit_exceeded`, "
                "`temporarily_unavailable`, `server_error`.",
            },
            "error_description": {"type": "string"},
        },
        "required": ["error", "error_description"],
    },
    "TokenRequest": {
        "type": "object",
        "description": "Client credentials go in the body (`client_secret_post`, as Zapier "
        "sends them) or in an HTTP Basic `Authorization` header.",
        "properties": {
            "grant_type": {"type": "string", "enum": ["authorization_code", "refresh_token"]},
            "client_id": {"type": "string", "pattern": NO_NUL},
            "client_secret": {"type": "string", "pattern": NO_NUL},
            "code": {
                "type": "string",
                "pattern": NO_NUL,
                "description": "For `authorization_code`.",
            },
            "redirect_uri": {
                "type": "string",
                "pattern": NO_NUL,
                "description": "For `authorization_code`: as in the authorize request.",
            },
            "code_verifier": {
                "type": "string",
                "pattern": NO_NUL,
                "description": "PKCE verifier, when the authorize request had a challenge.",
            },
            "refresh_token": {
                "type": "string",
                "pattern": NO_NUL,
                "description": "For `refresh_token`.",
            },
            "scope": {
                "type": "string",
                "pattern": NO_NUL,
                "description": "For `refresh_token`: narrow the scope (never widen it).",
            },
        },
        "required": ["grant_type"],
    },
    "TokenResponse": {
        "type": "object",
        "properties": {
            "access_token": {"type": "string"},
            "token_type": {"type": "string", "enum": ["Bearer"]},
            "expires_in": {"type": "integer", "description": "Seconds: 3600."},
            "refresh_token": {
                "type": "string",
                "description": "Rotates on every refresh: store the new one.",
            },
            "scope": {"type": "string", "description": "Space-separated, e.g. `read write`."},
        },
        "required": ["access_token", "token_type", "expires_in", "refresh_token", "scope"],
    },
    "RevokeTokenRequest": {
        "type": "object",
        "description": "RFC 7009. Client credentials in the body or HTTP Basic.",
        "properties": {
            "token": {"type": "string", "minLength": 1, "pattern": NO_NUL},
            "token_type_hint": {"type": "string", "enum": ["access_token", "refresh_token"]},
            "client_id": {"type": "string", "pattern": NO_NUL},
            "client_secret": {"type": "string", "pattern": NO_NUL},
        },
        "required": ["token"],
    },
}


def _oauth_response(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/OAuthError"}}},
    }


def _oauth_errors() -> dict[str, Any]:
    return {
        "400": _oauth_response(
            "`invalid_request`, `invalid_grant` (bad, used or expired code, wrong `redirect_uri`, "
            "PKCE mismatch, dead refresh token), `invalid_scope`, `unsupported_grant_type`, "
            "`unsupported_token_type`."
        ),
        "401": _oauth_response("`invalid_client`: unknown client or wrong secret."),
        "413": _oauth_response("`request_too_large`: the body is larger than 1 MB."),
        "415": _oauth_response(
            "`unsupported_media_type`: the body must be `application/x-www-form-urlencoded`."
        ),
        "429": _oauth_response(
            "`rate_limit_exceeded`: too many requests from this client and IP in the window."
        ),
        "500": {
            "description": "`server_error`: an unexpected error, logged under `request_id`.",
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/ServerError"}}
            },
        },
        "503": _oauth_response(
            "`temporarily_unavailable`: the database is briefly unavailable; retry after "
            "`Retry-After` seconds (never a 4xx, which would disconnect the user)."
        ),
    }


def _form_body(schema: str) -> dict[str, Any]:
    return {
        "required": True,
        "content": {
            "application/x-www-form-urlencoded": {
                "schema": {"$ref": f"#/components/schemas/{schema}"}
            }
        },
    }


def _oauth_paths(slug: str) -> dict[str, Any]:
    client_auth: list[dict[str, list[str]]] = [{}]  # client credentials in the body or HTTP Basic
    return {
        f"/api/oauth/{slug}/token": {
            "post": {
                "operationId": "token",
                "summary": "Exchange an authorization code, or refresh a token",
                "description": "Form-encoded (RFC 6749 §4.1.3, §6). Answers `Cache-Control: "
                "no-store`. Failed client authentications are counted per client id and "
                "per network; past the limit a failing request answers 429 (the right secret "
                "never does).",
                "tags": ["OAuth"],
                "security": client_auth,
                "requestBody": _form_body("TokenRequest"),
                "responses": {
                    "200": {
                        "description": "A new token pair.",
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/TokenResponse"}
                            }
                        },
                    },
                    **_oauth_errors(),
                },
            }
        },
        f"/api/oauth/{slug}/revoke_token": {
            "post": {
                "operationId": "revoke_token",
                "summary": "Revoke a token (RFC 7009)",
                "description": "Form-encoded and client-authenticated; revokes only the "
                "calling client's tokens (an access token with its refresh token). Answers 200 "
                "for unknown tokens too.",
                "tags": ["OAuth"],
                "security": client_auth,
                "requestBody": _form_body("RevokeTokenRequest"),
                "responses": {
                    "200": {"description": "Revoked, or nothing to revoke (empty body)."},
                    **_oauth_errors(),
                },
            }
        },
    }


# Examples shared by the connector endpoints' annotations.
REVIEW_REQUEST_EXAMPLE = OpenApiExample(
    "Scheduled",
    value={
        "id": "0b0c5a0e-7f4e-4bb9-9d7e-8a0f6c1d2e3f",
        "contact_id": "5d2e7c1a-3b4f-4e6a-9c8d-1f2e3d4c5b6a",
        "contact_name": "Jane Smith",
        "contact_email": "jane@example.com",
        "contact_phone": "+14155552671",
        "scheduled_for": "2026-11-21T15:00:00Z",
        "status": "scheduled",
        "message": "Review request scheduled for Jane Smith by SMS at 2026-11-21 15:00 UTC.",
        "location_id": "3f6c2b1e-9a4d-4c8e-b7f1-2d5e8a9c0b1d",
        "location_name": "Downtown",
    },
    response_only=True,
)
