"""Fixtures of the owner portal's tests: an owner logged in through the real session."""

from __future__ import annotations

import pytest
from django.test import Client


@pytest.fixture
def browser(owner) -> Client:
    """A Django test client logged in as ``owner``."""
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def other_browser(other_owner) -> Client:
    client = Client()
    client.force_login(other_owner)
    return client
