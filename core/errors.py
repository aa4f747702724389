"""The one error shape, ``{"error": code, "error_description": text}``, and where it is answered.

Under ``/api/`` every error is that JSON with the right status, whatever raised it and whatever
``DEBUG`` says (``wants_json_errors``):

* DRF views: the API's exception handler (``REST_FRAMEWORK["EXCEPTION_HANDLER"]``) renders
  DRF's exceptions and ``ApiError``, which views, services and the rate limiter raise for
  anything with a code of its own (idempotency conflicts, rate limits, ...);
* errors raised outside views: Django's ``handler400/403/404/500`` (below, named in
  ``config/urls.py``), and ``api_not_found`` for paths that match nothing;
* exceptions escaping any view (DRF or not), and, as a last line, a non-JSON error page (e.g.
  Django's debug pages with ``DEBUG=True``): ``ApiErrorMiddleware``.

A database or broker that cannot be reached, or that drops the connection
(``UNAVAILABLE_ERRORS``), is a 503 with ``Retry-After`` on every path, not a 500: under ``/api/``
``service_unavailable`` JSON, elsewhere the plain ``templates/503.html`` page
(``service_unavailable``, from a view through ``ApiErrorMiddleware``, from a middleware through
``handler500``). Nothing is half-written: the request's transaction rolled back, so a retry (with
the same ``Idempotency-Key`` or not) does the work once.

A 500 never carries internals: it says ``server_error`` and the request id (also in
``X-Request-ID``), and the traceback is logged under that id. Pages meant for people under
``/api/`` (the OAuth consent page, the API docs) set ``html_errors = True`` on their view class
and keep HTML errors. Everywhere else the handlers are Django's own views rendering
``templates/400.html`` ... ``500.html`` (plain pages that extend no template, so rendering them
cannot fail in turn).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from django.core.exceptions import (
    BadRequest,
    RequestDataTooBig,
    SuspiciousOperation,
    ValidationError,
)
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.template import loader
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from kombu.exceptions import OperationalError as BrokerOperationalError
from rest_framework import exceptions

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


def error_body(error: str, description: str, **extra: object) -> dict[str, object]:
    return {"error": error, "error_description": description, **extra}


# A body over DATA_UPLOAD_MAX_MEMORY_SIZE (core.wsgi answers it for chunked bodies).
REQUEST_TOO_LARGE = ("request_too_large", "The request body is larger than 1 MB.")
# Status -> (error code, description) for errors that carry no message of their own.
_STATUS_ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request", "The request could not be understood."),
    401: ("unauthorized", "Authentication is required."),
    403: ("forbidden", "You do not have permission to perform this action."),
    404: ("not_found", "There is nothing at this address."),
    405: ("method_not_allowed", "This method is not allowed here."),
    406: ("not_acceptable", "This endpoint answers application/json only."),
    413: REQUEST_TOO_LARGE,
    415: ("unsupported_media_type", "This endpoint does not accept that content type."),
    429: ("rate_limit_exceeded", "Too many requests."),
    500: ("server_error", "An unexpected error occurred; it was logged under the request id."),
    503: (
        "service_unavailable",
        "The service is briefly unavailable; nothing was done. Retry after Retry-After seconds.",
    ),
}
# Response headers kept when an error page is replaced with the JSON shape.
_KEPT_HEADERS = ("Allow", "Retry-After", "WWW-Authenticate")

# The database refused or dropped the connection (also: a lock or statement timeout, SQLite's
# "database is locked"), or the broker refused a task: the request's transaction rolled back,
# so the same request can be retried as it is.
UNAVAILABLE_ERRORS = (OperationalError, InterfaceError, BrokerOperationalError)
# What a 503 asks clients to wait: long enough for a dropped connection or a database restart.
UNAVAILABLE_RETRY_AFTER_SECONDS = 5


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
    if status_code == 503:
        headers = {"Retry-After": str(UNAVAILABLE_RETRY_AFTER_SECONDS), **(headers or {})}
    extra = {"request_id": getattr(request, "request_id", None)} if status_code == 500 else {}
    return error_response(status_code, error, description, headers=headers, **extra)


def service_unavailable(request: HttpRequest, exc: BaseException) -> HttpResponse:
    """503 for a database or broker that is down (``UNAVAILABLE_ERRORS``), logged without a
    traceback (an outage fails every request the same way): JSON under ``/api/``, a plain page
    elsewhere; both with ``Retry-After``."""
    logger.error(
        "service unavailable on %s %s: %s: %s",
        request.method,
        request.path,
        type(exc).__name__,
        str(exc).strip()[:300],
    )
    if wants_json_errors(request):
        return status_error_response(request, 503)
    # A template extending nothing but the error layout: rendering it needs no database.
    page = loader.get_template("503.html").render()
    return HttpResponse(
        page, status=503, headers={"Retry-After": str(UNAVAILABLE_RETRY_AFTER_SECONDS)}
    )


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

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
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
        # handling; DRF views re-raise what the API's exception handler does not map.
        if isinstance(exc, UNAVAILABLE_ERRORS):
            return service_unavailable(request, exc)
        if not wants_json_errors(request):
            return None
        return exception_response(request, exc)


# --- Django's error handlers (handler400/403/404/500 in config/urls.py) -------------------------


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if wants_json_errors(request):
        # RequestDataTooBig (a body over DATA_UPLOAD_MAX_MEMORY_SIZE) is a SuspiciousOperation,
        # which Django routes here: it is a 413, not a 400.
        return exception_response(request, exception)
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if wants_json_errors(request):
        return status_error_response(request, 403)
    return defaults.permission_denied(request, exception)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if wants_json_errors(request):
        return status_error_response(request, 404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    # Django calls handler500 while handling the exception (raised by a middleware, e.g. the
    # session's save): a database that is down is a 503 there too.
    exc = sys.exc_info()[1]
    if isinstance(exc, UNAVAILABLE_ERRORS):
        return service_unavailable(request, exc)
    if wants_json_errors(request):
        return status_error_response(request, 500)
    return defaults.server_error(request)


@csrf_exempt  # a 404 for every method: nothing here reads a session or changes anything
def api_not_found(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
    """The last ``/api/`` route: any path no endpoint matches (``/api/zapier/nope``,
    ``/api/unknown-platform/me``) is a JSON 404 for every method, with ``DEBUG`` on or off,
    counted like any other request by the rate limiter."""
    return status_error_response(request, 404)


def validation_error_line(exc: ValidationError) -> str:
    """A ``ValidationError`` on one line, each field named (``field: message``): what a
    management command prints."""
    if hasattr(exc, "message_dict"):
        return "; ".join(
            f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items()
        )
    return " ".join(exc.messages)
