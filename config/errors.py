"""Django's error handlers (``handler400/403/404/500`` in ``config/urls.py``).

Under ``/api/`` they answer the API's JSON shape (``connector_api.errors``); everywhere else,
Django's own views rendering ``templates/400.html`` ... ``500.html`` (plain pages that extend no
template, so rendering them cannot fail in turn).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views import defaults

from connector_api.errors import exception_response, status_error_response, wants_json_errors


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
    if wants_json_errors(request):
        return status_error_response(request, 500)
    return defaults.server_error(request)


def api_not_found(request: HttpRequest, *args, **kwargs) -> HttpResponse:
    """The last ``/api/`` route: any path no endpoint matches (``/api/zapier/nope``,
    ``/api/unknown-platform/me``) is a JSON 404, with ``DEBUG`` on or off, counted like any
    other request by the rate limiter."""
    return status_error_response(request, 404)
