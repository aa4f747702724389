"""reviews.services.business: creating a business, and its review sites (the kind and label a
link gets, the place a new site takes, an edit by the same rules)."""

from __future__ import annotations

from datetime import time

import pytest
from django.core.exceptions import ValidationError

from reviews.models import BusinessSettings, ReviewSite
from reviews.services import (
    business_create,
    business_settings_update,
    review_site_add,
    review_site_update,
)

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


# --- review sites ---------------------------------------------------------------------------------


def sites(owner) -> list[tuple[str, str, int]]:
    return list(
        ReviewSite.objects.filter(owner=owner)
        .order_by("position", "created_at")
        .values_list("kind", "label", "position")
    )


def test_a_site_added_without_a_position_goes_last(owner):
    """``owner`` lists one Google site, at position 0."""
    review_site_add(owner=owner, url="https://www.trustpilot.com/review/acme.example")
    review_site_add(owner=owner, url="https://www.facebook.com/acme", label="FB", position=0)
    assert sites(owner) == [
        ("google", "Google", 0),
        ("facebook", "FB", 0),
        ("trustpilot", "Trustpilot", 1),
    ]


def test_an_update_follows_the_new_link_and_keeps_the_place_unless_given_one(owner):
    site = ReviewSite.objects.get(owner=owner)
    ReviewSite.objects.filter(pk=site.pk).update(position=2)
    updated = review_site_update(owner=owner, site_id=site.pk, url="https://www.acme.example/r")
    assert (updated.kind, updated.label, updated.position) == ("custom", "acme.example", 2)
    review_site_update(
        owner=owner, site_id=site.pk, url="https://g.page/r/acme", label="Us", position=0
    )
    assert sites(owner) == [("google", "Us", 0)]


def test_an_update_is_refused_like_an_add_and_saves_nothing(owner, other_owner):
    site = ReviewSite.objects.get(owner=owner)
    before = sites(owner)
    with pytest.raises(ValidationError) as refused:
        review_site_update(owner=owner, site_id=site.pk, url="https://www.yelp.com/biz/acme")
    assert refused.value.message_dict == {
        "url": ["Yelp does not allow asking customers for reviews."]
    }
    with pytest.raises(ValidationError):
        review_site_update(owner=owner, site_id=site.pk, url="https://g.page/r/x", label="x" * 81)
    assert sites(owner) == before
    theirs = ReviewSite.objects.get(owner=other_owner)
    with pytest.raises(ReviewSite.DoesNotExist):
        review_site_update(owner=owner, site_id=theirs.pk, url="https://g.page/r/mine")


def test_the_service_reports_errors_of_both_rows_at_once(owner):
    with pytest.raises(ValidationError) as caught:
        business_settings_update(
            owner=owner, changes={"time_zone": "Nowhere/Land", "cooldown_days": 99999}
        )
    assert set(caught.value.message_dict) == {"time_zone", "cooldown_days"}


def test_the_service_refuses_fields_an_owner_may_not_change(owner):
    with pytest.raises(ValueError, match="is_staff"):
        business_settings_update(owner=owner, changes={"is_staff": True})
    owner.refresh_from_db()
    assert owner.is_staff is False
