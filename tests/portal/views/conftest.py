"""Fixtures of the portal pages' tests."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import LocationFactory, first_location
from tests.support.portal_data import member_client
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


# --- An account with several locations and members -----------------------------------------------


@pytest.fixture
def locations(owner):
    """The owner's three locations: its first (the default, renamed Downtown, holding the
    owner fixture's review site), Uptown and Airport."""
    return [
        first_location(owner, name="Downtown"),
        LocationFactory(account=owner, name="Uptown"),
        LocationFactory(account=owner, name="Airport"),
    ]


@pytest.fixture
def manager(owner, locations) -> Client:
    """A manager of Uptown."""
    return member_client(
        owner, role="manager", locations=[locations[1]], email="manager@example.com"
    )


@pytest.fixture
def viewer(owner, locations) -> Client:
    """A viewer of Uptown."""
    return member_client(owner, role="viewer", locations=[locations[1]], email="viewer@example.com")
