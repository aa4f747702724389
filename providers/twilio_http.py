"""Twilio's HTTP transport on a urllib3 pool, without requests' per-call machinery.

The twilio library sends every API call through an ``HttpClient``. Its default,
``TwilioHttpClient``, builds a requests ``Request`` per call, prepares it (hooks, cookies, auth
object, the URL parsed again, the environment merged), sends it through an adapter and reads the
reply into requests' models: most of the CPU a send spends in the SDK, and the dispatcher is
CPU-bound (what this client saves: docs/benchmarks.md, Optimisations kept). This client hands
the same request to urllib3, which requests uses underneath anyway: the same URL and query, form
(or JSON) body, headers and basic auth; redirects not followed (the SDK never asks for them);
the environment's proxy and CA bundle read once, as requests would have read them.

**Never retried.** urllib3 retries connection errors three times by default; here a request
goes out once (``retries=False``), because a create that is sent again can text a person twice.
Errors are urllib3's own: ``NewConnectionError`` and ``ConnectTimeoutError`` (nothing left),
``ReadTimeoutError`` and ``ProtocolError`` (it may have been delivered), which the channel maps
(``providers.request_never_left``).
"""

from __future__ import annotations

import base64
import logging
import os
from json import dumps
from typing import Any
from urllib.parse import unquote, urlencode, urlsplit

import requests
import urllib3
from twilio.http import HttpClient
from twilio.http.response import Response

logger = logging.getLogger("twilio.http_client")

_JSON_TYPES = ("application/json", "application/scim+json")


class PooledHttpClient(HttpClient):
    """A ``twilio.http.HttpClient`` on one urllib3 pool manager (thread-safe; one per process
    and configuration, so its connections are reused)."""

    def __init__(
        self,
        *,
        base_url: str,
        connect_timeout: float,
        read_timeout: float,
        pool_size: int,
    ) -> None:
        super().__init__(logger, is_async=False, timeout=None)
        options = {
            "num_pools": 4,
            "maxsize": pool_size,
            "block": False,
            "retries": False,
            "timeout": urllib3.Timeout(connect=connect_timeout, read=read_timeout),
            **_tls_options(base_url),
        }
        proxy = _proxy_for(base_url)
        self.pool: urllib3.PoolManager
        if proxy:
            self.pool = urllib3.ProxyManager(proxy, proxy_headers=_proxy_headers(proxy), **options)
        else:
            self.pool = urllib3.PoolManager(**options)

    def request(
        self,
        method: str,
        url: str,
        params: dict | None = None,
        data: dict | None = None,
        headers: dict | None = None,
        auth: tuple[str, str] | None = None,
        timeout: float | None = None,
        allow_redirects: bool = False,
    ) -> Response:
        method = method.upper()
        headers = dict(headers or {})
        if self.logger.isEnabledFor(logging.INFO):
            self.log_request({"method": method, "url": url, "params": params, "headers": headers})
        if params:
            url = f"{url}{'&' if '?' in url else '?'}{encode_form(params)}"
        body = None
        if headers.get("Content-Type") in _JSON_TYPES:
            body = dumps(data) if data is not None else None
        elif data:
            body = encode_form(data)
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
        if auth:
            user, password = auth
            token = base64.b64encode(f"{user}:{password}".encode("latin-1")).decode("ascii")
            headers["Authorization"] = f"Basic {token}"
        options: dict[str, Any] = {}
        if timeout is not None:
            if timeout <= 0:
                raise ValueError(timeout)
            options["timeout"] = urllib3.Timeout(connect=timeout, read=timeout)
        reply = self.pool.request(
            method,
            url,
            body=body,
            headers=headers,
            redirect=allow_redirects,
            retries=False,
            **options,
        )
        if self.logger.isEnabledFor(logging.INFO):
            self.log_response(reply.status, reply)
        return Response(reply.status, reply.data.decode(_charset(reply), "replace"), reply.headers)


def encode_form(values: dict) -> str:
    """``application/x-www-form-urlencoded`` as requests writes it: a list is the key repeated,
    a ``None`` is left out (the SDK leaves unset parameters out before this anyway)."""
    pairs = []
    for key, value in values.items():
        for item in value if isinstance(value, list | tuple) else [value]:
            if item is not None:
                pairs.append((key, item))
    return urlencode(pairs)


def _charset(reply: urllib3.BaseHTTPResponse) -> str:
    content_type = reply.headers.get("Content-Type", "")
    for part in content_type.split(";")[1:]:
        name, _, value = part.strip().partition("=")
        if name.lower() == "charset" and value:
            return value.strip("\"'")
    return "utf-8"  # Twilio answers JSON, which is UTF-8


def _proxy_for(url: str) -> str | None:
    """The proxy requests would use for ``url`` from the environment (``HTTPS_PROXY``,
    ``ALL_PROXY``, ``NO_PROXY``...), or None."""
    return requests.utils.select_proxy(url, requests.utils.get_environ_proxies(url))


def _proxy_headers(proxy: str) -> dict[str, str] | None:
    """``Proxy-Authorization`` for a proxy URL with credentials, as requests adds it."""
    parts = urlsplit(proxy)
    if not parts.username:
        return None
    return urllib3.make_headers(
        proxy_basic_auth=f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    )


def _tls_options(url: str) -> dict:
    """Verify certificates against the bundle requests would use: ``REQUESTS_CA_BUNDLE`` or
    ``CURL_CA_BUNDLE`` (a file or a directory) if set, else certifi's."""
    if not url.startswith("https:"):
        return {}
    bundle = (
        os.environ.get("REQUESTS_CA_BUNDLE")
        or os.environ.get("CURL_CA_BUNDLE")
        or requests.utils.DEFAULT_CA_BUNDLE_PATH
    )
    if os.path.isdir(bundle):
        return {"cert_reqs": "CERT_REQUIRED", "ca_cert_dir": bundle}
    return {"cert_reqs": "CERT_REQUIRED", "ca_certs": bundle}
