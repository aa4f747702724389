"""Helpers for the API contract tests (rate limits, errors, schema)."""

from __future__ import annotations

import itertools

import pytest

_addresses = itertools.count(1)


@pytest.fixture
def client_ip():
    """A client address of this test's own (REMOTE_ADDR for Django's test clients)."""
    n = next(_addresses)
    return f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}"


@pytest.fixture
def limit(settings):
    """A small hourly limit, so that tests can reach it."""
    settings.RATE_LIMIT_PER_HOUR = 3
    return 3


def rate_headers(response) -> tuple[int, int, int]:
    return (
        int(response["X-RateLimit-Limit"]),
        int(response["X-RateLimit-Remaining"]),
        int(response["X-RateLimit-Reset"]),
    )
