"""The API's exception handler (``REST_FRAMEWORK["EXCEPTION_HANDLER"]``): DRF's exceptions and
``ApiError`` as the one error shape, ``{"error": code, "error_description": text}``, with the
right status.

Views and services raise ``core.errors.ApiError`` for anything with a code of its own
(idempotency conflicts, a duplicate within the cooldown, ...). Validation errors also carry a
``fields`` object naming each offending field, and name them in ``error_description``. Errors
that never reach DRF are answered in the same shape by ``core.errors``.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response

from core.errors import ApiError, error_body

logger = logging.getLogger(__name__)


# DRF exception class -> (status, error code). Order matters: subclasses first.
_CODES: list[tuple[type[exceptions.APIException], str]] = [
    (exceptions.NotAuthenticated, "unauthorized"),
    (exceptions.AuthenticationFailed, "unauthorized"),
    (exceptions.PermissionDenied, "forbidden"),
    (exceptions.NotFound, "not_found"),
    (exceptions.MethodNotAllowed, "method_not_allowed"),
    (exceptions.NotAcceptable, "not_acceptable"),
    (exceptions.UnsupportedMediaType, "unsupported_media_type"),
    (exceptions.Throttled, "rate_limit_exceeded"),
    (exceptions.ParseError, "invalid_request"),
    (exceptions.ValidationError, "invalid_request"),
]


def _flatten(detail: object) -> list[str]:
    if isinstance(detail, dict):
        return [message for value in detail.values() for message in _flatten(value)]
    if isinstance(detail, list):
        return [message for value in detail for message in _flatten(value)]
    return [str(detail)]


def _validation_body(detail: object) -> dict[str, object]:
    if not isinstance(detail, dict):
        return error_body("invalid_request", " ".join(_flatten(detail)))
    fields = {name: _flatten(messages) for name, messages in detail.items()}
    parts = [
        " ".join(messages) if name == "non_field_errors" else f"{name}: {' '.join(messages)}"
        for name, messages in fields.items()
    ]
    return error_body("invalid_request", "Invalid request. " + " ".join(parts), fields=fields)


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, RequestDataTooBig):
        exc = ApiError(413, "request_too_large", "The request body is larger than 1 MB.")
    if not isinstance(exc, exceptions.APIException):
        return None  # a bug: Django's 500 handling (and the API's JSON 500) take it from here

    headers: dict[str, str] = {}
    # Set by DRF on authentication failures (APIView.handle_exception), and by throttles.
    auth_header: str | None = getattr(exc, "auth_header", None)
    if auth_header:
        headers["WWW-Authenticate"] = auth_header
    wait: float | None = getattr(exc, "wait", None)
    if wait is not None:
        headers["Retry-After"] = str(max(1, int(wait + 0.999)))

    if isinstance(exc, ApiError):
        body = error_body(exc.error, exc.description, **exc.extra)
        headers.update(exc.headers)
    elif isinstance(exc, exceptions.ValidationError):
        body = _validation_body(exc.detail)
    else:
        code = next((c for cls, c in _CODES if isinstance(exc, cls)), "invalid_request")
        detail_code = getattr(exc.detail, "code", None)
        # A permission class may name a precise code, e.g. insufficient_scope.
        if isinstance(exc, exceptions.PermissionDenied) and detail_code not in (
            None,
            "permission_denied",
        ):
            code = detail_code
        body = error_body(code, " ".join(_flatten(exc.detail)))

    if exc.status_code >= status.HTTP_500_INTERNAL_SERVER_ERROR:
        logger.error("api error %s: %s", exc.status_code, body["error"])
    return Response(body, status=exc.status_code, headers=headers)
