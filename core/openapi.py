"""OpenAPI components of the one error shape, for any app's DRF views (drf-spectacular).

``error_responses(...)`` gives an operation's error responses, each with its component
(``Error``, ``ValidationError`` with ``fields``, ``ServerError`` with ``request_id``) and the
codes it may carry; 429, 500 and 503 are always possible (``core.ratelimit``, ``core.errors``).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers


class Error(serializers.Serializer[dict[str, object]]):
    """The one error shape of the whole API."""

    error = serializers.CharField(help_text="Machine-readable error code, e.g. `not_found`.")
    error_description = serializers.CharField(
        help_text="What went wrong, for people (Zapier shows it to the user)."
    )


class ValidationError(Error):
    """A 400 naming each offending field (in `fields` and in `error_description`)."""

    # DRF's metaclass takes declared fields off the class, so this does not shadow
    # ``Serializer.fields`` at runtime, which mypy cannot see.
    fields = serializers.DictField(  # type: ignore[assignment]  # the API's field name
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text="Each offending field (or header) with its messages.",
    )


class ServerError(Error):
    """A 500: no internals, only the request id under which the error was logged."""

    request_id = serializers.CharField(
        allow_null=True, help_text="Also in the `X-Request-ID` header; quote it to support."
    )


# Status -> (component, description listing the codes).
_ERRORS: dict[int, tuple[type[Error], str]] = {
    400: (ValidationError, "`invalid_request`: missing or invalid parameters or body."),
    401: (
        Error,
        "`unauthorized`: the bearer token is missing, invalid, expired or revoked (with "
        "`WWW-Authenticate: Bearer`). Refresh the token and retry.",
    ),
    403: (Error, "`insufficient_scope`: the token does not grant the scope this endpoint needs."),
    404: (Error, "`not_found`: there is nothing at this address."),
    409: (
        Error,
        "`idempotency_in_progress`: a request with this `Idempotency-Key` is still running; "
        "retry after `Retry-After` seconds.",
    ),
    413: (Error, "`request_too_large`: the body is larger than 1 MB."),
    415: (Error, "`unsupported_media_type`: the body's content type is not accepted here."),
    422: (
        Error,
        "`idempotency_key_reused`: this `Idempotency-Key` was used with a different body.",
    ),
    429: (
        Error,
        "`rate_limit_exceeded`: over the hourly limit; retry after `Retry-After` seconds "
        "(the request was not processed, so retrying it is safe).",
    ),
    500: (ServerError, "`server_error`: an unexpected error, logged under `request_id`."),
    503: (
        Error,
        "`service_unavailable`: the database or the broker is briefly unavailable; nothing was "
        "done, retry after `Retry-After` seconds (with the same `Idempotency-Key`, if any).",
    ),
}


def error_responses(*statuses: int, **overrides: OpenApiResponse) -> dict[int, OpenApiResponse]:
    """The error responses of an operation; 429, 500 and 503 are always possible."""
    responses: dict[int, OpenApiResponse] = {}
    for status in sorted({*statuses, 429, 500, 503}):
        component, description = _ERRORS[status]
        responses[status] = OpenApiResponse(component, description=description)
    for name, response in overrides.items():
        responses[int(name.lstrip("_"))] = response
    return dict(sorted(responses.items()))
