"""Fixtures of the back-office tests: a business with no quiet hours, staff clients."""

from __future__ import annotations

import pytest

from reviews.models import BusinessSettings
from tests.factories import ReviewSiteFactory, UserFactory


@pytest.fixture
def business(db):
    owner = UserFactory(business_name="Acme Plumbing", time_zone="America/New_York")
    BusinessSettings.objects.create(
        owner=owner, send_window_applies_to=BusinessSettings.WindowAppliesTo.NONE
    )
    ReviewSiteFactory(owner=owner, label="Google", url="https://g.page/r/acme/review")
    return owner
