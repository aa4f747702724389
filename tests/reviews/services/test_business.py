"""reviews.services.business: creating a business."""

from __future__ import annotations

from datetime import time

import pytest

from reviews.models import BusinessSettings
from reviews.services import business_create

pytestmark = pytest.mark.django_db


# --- settings -------------------------------------------------------------------------------------


def test_business_create_creates_the_review_settings_with_the_defaults(db):
    owner = business_create(
        email="owner@example.com", password="a long passphrase 42", business_name="Acme"
    )
    policy = owner.review_settings
    assert policy.initial_channel == BusinessSettings.InitialChannel.SMS
    assert policy.follow_up_offsets_hours == [72, 168]
    assert policy.follow_up_other_channel is True
    assert policy.cooldown_days == 90
    assert (policy.send_window_start, policy.send_window_end) == (time(8), time(21))
    assert policy.send_window_applies_to == BusinessSettings.WindowAppliesTo.SMS
    assert policy.default_delay_hours == 0
