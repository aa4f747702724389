"""Rate limits for everything under ``/api/``: a fixed window per bucket, checked before any work.

Buckets (separate counters, each ``RATE_LIMIT_PER_HOUR`` per window):

* ``user:<id>``: requests authenticated with a valid bearer token, per owner, across all their
  tokens and clients. Counted by ``RateLimitedView`` right after DRF has authenticated the token
  (no second token lookup) and before permissions and the handler run;
* ``ip:<ip>``: everything else but the OAuth token and RFC 7009 revocation endpoints: no or an
  invalid token, unknown paths, the consent page.

The token and revocation endpoints count only **failed client authentications** (unknown client
id or wrong secret), after the secret was checked, in two buckets of their own,
``client-failures:<hash of client_id>`` and ``client-failures-ip:<network>`` (an IPv4 address or
an IPv6 /64), each ``OAUTH_CLIENT_AUTH_FAILURES_PER_HOUR`` per window. Past either limit a failing
request answers 429 instead of 401 (and is not counted again); a request with the right secret
is never refused and never counted (client secrets are long and random: failures are for
alerting, not a defence against guessing, and a shared egress address must not let anyone lock
a platform's integration out).

The window is GitHub's: it starts with a bucket's first request and lasts
``RATE_LIMIT_WINDOW_SECONDS`` (an hour); ``X-RateLimit-Reset`` is its end in Unix epoch seconds,
``X-RateLimit-Remaining`` is the limit minus the requests counted so far, and request N+1 is the
first 429, with an integer ``Retry-After`` (what Zapier reads). Every request counts, whatever
its answer (429s included); a 429 is answered before the view runs, so it is always safe to
retry (on the token endpoints, a 429 answers only a request whose client authentication failed).

The counters live in ``core.ratelimit_store`` (Redis with ``REDIS_URL``, else the database; fail
open).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import ipaddress
import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote_plus

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.views import APIView

from .errors import ApiError, error_response, wants_json_errors
from .ratelimit_store import Usage, get_limiter

logger = logging.getLogger(__name__)


# --- Who is asking -------------------------------------------------------------------------------


def client_ip(request: HttpRequest) -> str:
    """The client's address: ``REMOTE_ADDR``, or, behind ``NUM_PROXIES`` proxies that each append
    to ``X-Forwarded-For``, the address the outermost trusted proxy saw (clients can prepend
    anything to that header, so entries further left are never trusted)."""
    proxies = int(settings.NUM_PROXIES)
    if proxies:
        header = str(request.META.get("HTTP_X_FORWARDED_FOR", ""))
        forwarded = [part.strip() for part in header.split(",") if part.strip()]
        if forwarded:
            return forwarded[-min(proxies, len(forwarded))][:64]
    return str(request.META.get("REMOTE_ADDR", ""))[:64] or "unknown"


def basic_credentials(request: HttpRequest) -> str | None:
    """The decoded ``id:secret`` of an HTTP Basic ``Authorization`` header, still form-encoded
    (RFC 6749 §2.3.1); ``""`` when the header is malformed, ``None`` when it is not Basic."""
    scheme, _, credentials = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        return base64.b64decode(credentials.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return ""


def client_id(request: HttpRequest) -> str:
    """The OAuth client id a token or revocation request names (HTTP Basic or the form body).

    Never authenticates anything, and never fails: a malformed header or body gives "".
    """
    decoded = basic_credentials(request)
    if decoded is not None:
        # RFC 6749 §2.3.1: the client id is form-encoded before Basic encoding.
        return unquote_plus(decoded.partition(":")[0])
    if request.method == "POST" and request.content_type == "application/x-www-form-urlencoded":
        try:
            return request.POST.get("client_id", "")
        except (RequestDataTooBig, SuspiciousOperation):
            return ""  # the view answers 413/400 when it reads the body
    return ""


def client_network(request: HttpRequest) -> str:
    """The client's network for counting failures: its IPv4 address, or the /64 of an IPv6
    address (one subscriber's whole allocation: anyone holding it has millions of addresses)."""
    return network_of(client_ip(request))


def network_of(ip: str) -> str:
    """``client_network`` of an address given as text (anything else is returned as it is)."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return ip
    if address.version == 6:
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return ip


def remember_usage(request: HttpRequest, usage: Usage | None) -> None:
    """Keep the usage counted for ``request``, whose ``X-RateLimit-*`` headers the middleware
    sets from it (``None``: nothing counted yet)."""
    request.rate_limit = usage  # type: ignore[attr-defined]  # ours: read back by getattr below


def user_bucket(user: Any) -> str:
    """Per account: a member's calls count with its owner's."""
    return f"user:{getattr(user, 'account_id', None) or user.pk}"


def ip_bucket(request: HttpRequest) -> str:
    return f"ip:{client_ip(request)}"


def client_failure_buckets(request: HttpRequest) -> tuple[str, str]:
    """The two buckets of failed client authentications: per client id, per network."""
    # Hashed: the client id is whatever the caller sent, of any length.
    digest = hashlib.sha256(client_id(request).encode("utf-8", "replace")).hexdigest()[:24]
    return f"client-failures:{digest}", f"client-failures-ip:{client_network(request)}"


def client_failure_count(request: HttpRequest) -> Usage:
    """Count one failed client authentication (token and RFC 7009 endpoints) per client id and
    per network; returns the fuller bucket's usage, which the response's headers show. Logs a
    warning when a bucket goes over its limit (once per bucket and window)."""
    limiter = get_limiter()
    limit = settings.OAUTH_CLIENT_AUTH_FAILURES_PER_HOUR
    usages = []
    for bucket in client_failure_buckets(request):
        usage = limiter.hit(bucket, limit=limit)
        if usage.enforced and usage.count == limit + 1:
            logger.warning(
                "failed client authentications over the limit",
                extra={"bucket": bucket, "limit": limit, "ip": client_ip(request)},
            )
        usages.append(usage)
    usage = max(usages, key=lambda u: u.count)
    remember_usage(request, usage)
    return usage


def client_failure_peek(request: HttpRequest) -> Usage:
    """The fuller failure bucket's usage, counting nothing (a request whose client
    authenticated, or that never got as far as authenticating)."""
    limit = settings.OAUTH_CLIENT_AUTH_FAILURES_PER_HOUR
    usages = get_limiter().peek(*client_failure_buckets(request), limit=limit)
    usage = max(usages, key=lambda u: u.count)
    remember_usage(request, usage)
    return usage


def client_failures_description(usage: Usage) -> str:
    return (
        f"Too many failed client authentications for this client or from this network "
        f"(limit {usage.limit} per hour); retry after {usage.retry_after()} seconds. "
        f"Requests with the right client secret are not refused."
    )


def count_request(request: HttpRequest, bucket: str) -> Usage:
    """Count ``request`` once (in ``bucket``) and remember the result for the response headers."""
    usage = get_limiter().hit(bucket)
    remember_usage(request, usage)
    return usage


def exceeded_description(usage: Usage) -> str:
    return (
        f"Rate limit of {usage.limit} requests per hour exceeded; "
        f"retry after {usage.retry_after()} seconds."
    )


class RateLimitExceeded(ApiError):
    def __init__(self, usage: Usage) -> None:
        super().__init__(
            429,
            "rate_limit_exceeded",
            exceeded_description(usage),
            headers={"Retry-After": str(usage.retry_after())},
        )


def too_many_requests(request: HttpRequest, usage: Usage) -> HttpResponse:
    """The 429 answered by the middleware, before the view runs."""
    headers = {"Retry-After": str(usage.retry_after())}
    if not wants_json_errors(request):  # the consent page: a page for people
        response = render(request, "429.html", {"retry_after": usage.retry_after()}, status=429)
        response["Retry-After"] = headers["Retry-After"]
        return response
    return error_response(429, "rate_limit_exceeded", exceeded_description(usage), headers=headers)


# --- Where requests are counted ------------------------------------------------------------------


class RateLimitedView(APIView):
    """Mixin for DRF views under ``/api/``: counts the request per owner once DRF has
    authenticated its bearer token, before permissions, throttles and the handler run.

    A request whose token is invalid (or absent) is counted per IP instead, and its 401 becomes
    a 429 when that bucket is over the limit.
    """

    rate_limit_scope = "user"

    def perform_authentication(self, request: Request) -> None:
        django_request = request._request
        try:
            super().perform_authentication(request)
        except exceptions.APIException:
            self._count(django_request, ip_bucket(django_request))
            raise
        if request.auth is not None and request.user is not None:
            self._count(django_request, user_bucket(request.user))
        else:
            self._count(django_request, ip_bucket(django_request))

    @staticmethod
    def _count(django_request: HttpRequest, bucket: str) -> None:
        if getattr(django_request, "rate_limit", None) is not None:
            return  # already counted (by the middleware)
        usage = count_request(django_request, bucket)
        if usage.exceeded:
            raise RateLimitExceeded(usage)


def _has_bearer_token(request: HttpRequest) -> bool:
    scheme, _, _ = str(request.META.get("HTTP_AUTHORIZATION", "")).partition(" ")
    return scheme.lower() == "bearer"


class RateLimitMiddleware:
    """Counts every ``/api/`` request once and puts ``X-RateLimit-*`` on every ``/api/`` response.

    ``process_view`` counts before the view runs, per IP, anything that is not a
    ``RateLimitedView`` with a bearer token (those count per owner once authenticated) nor a
    view that declares ``rate_limit_scope = "client"`` (the token endpoints: they count failed
    client authentications after checking the secret, ``client_failure_count``). A request that
    no view counted (refused by an earlier middleware, or failed before authentication) is
    counted per IP on the way out.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if not request.path_info.startswith("/api/"):
            return self.get_response(request)
        remember_usage(request, None)
        response = self.get_response(request)
        usage: Usage | None = getattr(request, "rate_limit", None)
        if usage is None:
            usage = count_request(request, ip_bucket(request))
            if usage.exceeded:
                response = too_many_requests(request, usage)
        for name, value in usage.headers().items():
            response[name] = value
        return response

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., HttpResponseBase],
        view_args: tuple[Any, ...],
        view_kwargs: dict[str, Any],
    ) -> HttpResponse | None:
        if getattr(request, "rate_limit", True) is not None:
            return None  # not under /api/, or already counted
        scope = getattr(getattr(view_func, "view_class", None), "rate_limit_scope", "ip")
        if scope == "user" and _has_bearer_token(request):
            return None  # counted per owner by RateLimitedView once the token is authenticated
        if scope == "client":
            return None  # failed client authentications only, counted by the view
        usage = count_request(request, ip_bucket(request))
        if usage.exceeded:
            return too_many_requests(request, usage)
        return None
