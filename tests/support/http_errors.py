"""A real transport error from requests, as a provider's SDK would wrap it."""

from __future__ import annotations

import requests


def connection_error(url: str, *, timeout: float = 1.0) -> requests.RequestException:
    """The error ``requests.get(url)`` raises (a refused connection, a read timeout...)."""
    try:
        requests.get(url, timeout=timeout)
    except requests.RequestException as exc:
        return exc
    raise AssertionError("expected a connection error")
