"""``/api/schema/`` (the OpenAPI document) and ``/api/docs/`` (Swagger UI for people).

Public: the schema describes the contract, not anyone's data. Swagger UI's files are served by
WhiteNoise from drf-spectacular-sidecar, and its start-up script from this view (``?script``),
so the page's Content-Security-Policy allows scripts from this origin only.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase
from django.utils.decorators import method_decorator
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

# Swagger UI needs its own stylesheet plus inline style attributes, and data: icons; scripts,
# fetches and everything else: this origin only.
DOCS_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)


def _docs_headers(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    def wrapped(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponseBase:
        response = view(request, *args, **kwargs)
        response["Content-Security-Policy"] = DOCS_CSP
        response["Referrer-Policy"] = "no-referrer"
        return response

    return wrapped


class SchemaApi(SpectacularAPIView):
    """The OpenAPI 3 document: YAML by default, JSON with ``?format=json`` or
    ``Accept: application/vnd.oai.openapi+json``."""


@method_decorator(_docs_headers, name="dispatch")
class DocsPage(SpectacularSwaggerSplitView):
    """Swagger UI for the schema (a page for people: its errors are HTML)."""

    html_errors = True
    url_name = "api-schema"
    title = "Review requests API"
