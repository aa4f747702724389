"""The API's one error shape: ``{"error": code, "error_description": text}`` with the right status.

DRF's exceptions are mapped here (``REST_FRAMEWORK["EXCEPTION_HANDLER"]``); views and services
raise ``ApiError`` for anything with a code of its own (idempotency conflicts, a duplicate
within the cooldown, ...). Validation errors also carry a ``fields`` object naming each
offending field, and name them in ``error_description``.

Errors that never reach DRF are JSON too under ``/api/`` (``wants_json_errors``): Django's
``handler400/403/404/500`` (``config/errors.py``) for errors raised outside views, a catch-all
route for paths that match nothing, and ``ApiErrorMiddleware``, which answers exceptions escaping
any view (DRF or not) and, as a last line, replaces a non-JSON error page (e.g. Django's
debug pages with ``DEBUG=True``) with the JSON shape. A 500 never carries internals: it says
``server_error`` and the request id (also in ``X-Request-ID``), and the traceback is logged under
that id. Pages meant for people under ``/api/`` (the OAuth consent page, the API docs) set
``html_errors = True`` on their view class and keep HTML errors.
"""

from __future__ import annotations

import logging

from django.core.exceptions import BadRequest, RequestDataTooBig, SuspiciousOperation
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from rest_framework import exceptions, status
from rest_framework.response import Response

logger = logging.getLogger(__name__)


class ApiError(exceptions.APIException):
    """An API error with an explicit code, description and optional extra body fields."""

    def __init__(
        self,
        status_code: int,
        error: str,
        description: str,
        *,
        headers: dict[str, str] | None = None,
        **extra: object,
    ) -> None:
        super().__init__(detail=description, code=error)
        self.status_code = status_code
        self.error = error
        self.description = description
        self.headers = headers or {}
        self.extra = extra


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


def error_body(error: str, description: str, **extra: object) -> dict[str, object]:
    return {"error": error, "error_description": description, **extra}


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


def api_exception_handler(exc: Exception, context: dict) -> Response | None:
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, RequestDataTooBig):
        exc = ApiError(413, "request_too_large", "The request body is larger than 1 MB.")
    if not isinstance(exc, exceptions.APIException):
        return None  # a bug: Django's 500 handling (and the API's JSON 500) take it from here

    headers: dict[str, str] = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if getattr(exc, "wait", None) is not None:
        headers["Retry-After"] = str(max(1, int(exc.wait + 0.999)))

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


# --- Outside DRF: Django's handlers, exceptions escaping views, non-JSON error pages -----------

# Status -> (error code, description) for errors that carry no message of their own.
_STATUS_ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request", "The request could not be understood."),
    401: ("unauthorized", "Authentication is required."),
    403: ("forbidden", "You do not have permission to perform this action."),
    404: ("not_found", "There is nothing at this address."),
    405: ("method_not_allowed", "This method is not allowed here."),
    406: ("not_acceptable", "This endpoint answers application/json only."),
    413: ("request_too_large", "The request body is larger than 1 MB."),
    415: ("unsupported_media_type", "This endpoint does not accept that content type."),
    429: ("rate_limit_exceeded", "Too many requests."),
    500: ("server_error", "An unexpected error occurred; it was logged under the request id."),
}
# Response headers kept when an error page is replaced with the JSON shape.
_KEPT_HEADERS = ("Allow", "Retry-After", "WWW-Authenticate")


def wants_json_errors(request: HttpRequest) -> bool:
    """``/api/`` requests get JSON errors, except on views meant for people (``html_errors``)."""
    if not request.path_info.startswith("/api/"):
        return False
    match = getattr(request, "resolver_match", None)
    view_class = getattr(getattr(match, "func", None), "view_class", None)
    return not getattr(view_class, "html_errors", False)


def error_response(
    status_code: int,
    error: str,
    description: str,
    *,
    headers: dict[str, str] | None = None,
    **extra: object,
) -> JsonResponse:
    return JsonResponse(
        error_body(error, description, **extra), status=status_code, headers=headers
    )


def status_error_response(
    request: HttpRequest, status_code: int, headers: dict[str, str] | None = None
) -> JsonResponse:
    """The JSON error for a bare status (a 500 names the request id)."""
    status_code = (
        status_code if status_code in _STATUS_ERRORS else (500 if status_code >= 500 else 400)
    )
    error, description = _STATUS_ERRORS[status_code]
    extra = {"request_id": getattr(request, "request_id", None)} if status_code == 500 else {}
    return error_response(status_code, error, description, headers=headers, **extra)


def exception_response(request: HttpRequest, exc: BaseException) -> JsonResponse:
    """The JSON answer to an exception that escaped a view (or a handler got)."""
    if isinstance(exc, Http404):
        return status_error_response(request, 404)
    if isinstance(exc, DjangoPermissionDenied):
        return status_error_response(request, 403)
    if isinstance(exc, RequestDataTooBig):
        return status_error_response(request, 413)
    if isinstance(exc, SuspiciousOperation | BadRequest | MultiPartParserError):
        return error_response(
            400, "invalid_request", "The request could not be understood; check headers and body."
        )
    logger.error(
        "unhandled exception on %s %s",
        request.method,
        request.path,
        exc_info=(type(exc), exc, exc.__traceback__),
    )
    return status_error_response(request, 500)


class ApiErrorMiddleware:
    """Every ``/api/`` error is the JSON shape, whatever raised it and whatever ``DEBUG`` says."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code >= 400
            and not response.get("Content-Type", "").startswith("application/json")
            and wants_json_errors(request)
        ):
            # An error page rendered outside our handlers (with DEBUG=True, Django's technical
            # pages, which show settings and tracebacks): replace it, keep what clients need.
            kept = {name: response[name] for name in _KEPT_HEADERS if name in response}
            response = status_error_response(request, response.status_code, headers=kept)
        return response

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        # Django calls this for exceptions escaping the view, before its own (DEBUG-dependent)
        # handling; DRF views re-raise what the exception handler above does not map.
        if not wants_json_errors(request):
            return None
        return exception_response(request, exc)
