"""Fixtures of the portal pages' tests."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.support.portal_golden import NOON_IN_NEW_YORK, single_location_business


@pytest.fixture
def golden(db, settings, time_machine):
    """A client logged in as the fixed one-location business of ``portal_golden``, at its
    fixed time, and that business's sent request: ``(client, owner, request)``."""
    settings.SITE_URL = "https://reviews.example.com"
    settings.DEFAULT_FROM_EMAIL = "Reviews <reviews@example.com>"
    time_machine.move_to(NOON_IN_NEW_YORK, tick=False)
    owner, sent = single_location_business()
    client = Client()
    client.force_login(owner)
    return client, owner, sent
