"""Browser-facing security headers and a CSRF check that works with ``no-referrer`` pages.

Every HTML page says ``Referrer-Policy: no-referrer`` (``SECURE_REFERRER_POLICY`` and the meta
tag in ``base.html``): the OAuth consent page's URL carries the client's ``state`` and PKCE
challenge, and no page of ours should leak its URL. Under that policy a browser serialises the
``Origin`` of a same-origin form POST as ``null`` and sends no ``Referer`` (Fetch standard,
"append a request Origin header"), and Django's CSRF middleware rejects ``Origin: null``, so
every form (login, consent, admin) would fail in a real browser. ``NullOriginMiddleware``, just
before Django's CSRF middleware, restores the request's own origin for ``Origin: null`` only when
the browser itself vouches that the request is same-origin (``Sec-Fetch-Site: same-origin``, a
header scripts cannot set); Django's middleware then checks the CSRF token as always.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.views.decorators.clickjacking import xframe_options_deny

# Nothing loads from anywhere but this origin; no page may frame it.
STRICT_CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'"
)


class NullOriginMiddleware:
    """A same-origin form post from a ``no-referrer`` page: ``Origin: null`` means our origin.

    Runs right before ``CsrfViewMiddleware``. Any other ``Origin: null`` (sandboxed frames,
    cross-site posts, browsers without Fetch Metadata) is left alone, and Django rejects it.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        meta = request.META
        if meta.get("HTTP_ORIGIN") == "null" and meta.get("HTTP_SEC_FETCH_SITE") == "same-origin":
            try:
                host = request.get_host()
            except DisallowedHost:
                host = None  # left as is: CSRF (or the host check) refuses it
            if host:
                meta["HTTP_ORIGIN"] = f"{request.scheme}://{host}"
        return self.get_response(request)


class FrameAncestorsMiddleware:
    """``Content-Security-Policy: frame-ancestors 'none'`` on every response that sets no CSP.

    The CSP twin of ``X_FRAME_OPTIONS = "DENY"`` (RFC 9700 §4.16 asks for both on the
    authorization, login and error pages; nothing here is meant to be framed).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", "frame-ancestors 'none'")
        return response


def strict_page(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """For pages that handle credentials (OAuth consent and errors): not frameable, no
    third-party anything, no Referer, never cached."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        response = view(request, *args, **kwargs)
        response["Content-Security-Policy"] = STRICT_CSP
        response["Referrer-Policy"] = "no-referrer"
        response["Cache-Control"] = "no-store"
        return response

    return xframe_options_deny(wrapped)
