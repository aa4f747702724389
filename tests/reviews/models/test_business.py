"""A business's settings and message templates (reviews.models.business): validated by the models,
read from the cache, every save reaching it at once; whether a row's location lists a site."""

from __future__ import annotations

from datetime import time

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core import versioned_cache
from reviews.models import BusinessSettings, MessageTemplate, ReviewRequest, ReviewSite
from reviews.services import business_settings_update
from tests.factories import (
    LocationFactory,
    ReviewRequestFactory,
    ReviewSiteFactory,
    first_location,
)
from tests.support.cache import DownCache

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "offsets",
    [[0], [168, 72], [72, 72], [1, 2, 3, 4, 5, 6], [8761], ["72"], [True], "72", [1.5]],
)
def test_follow_up_offsets_must_be_increasing_whole_hours(owner, offsets):
    policy = BusinessSettings(owner=owner, follow_up_offsets_hours=offsets)
    with pytest.raises(ValidationError) as exc:
        policy.full_clean()
    assert "follow_up_offsets_hours" in exc.value.message_dict


def test_a_window_with_equal_start_and_end_is_refused_unless_quiet_hours_are_off(owner):
    policy = BusinessSettings(owner=owner, send_window_start=time(8), send_window_end=time(8))
    with pytest.raises(ValidationError):
        policy.full_clean()
    policy.send_window_applies_to = BusinessSettings.WindowAppliesTo.NONE
    policy.full_clean()


def test_settings_are_created_once_on_first_use(owner):
    first = BusinessSettings.for_owner(owner)
    assert BusinessSettings.for_owner(owner).pk == first.pk == owner.pk


def settings_queries(queries) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if "reviews_businesssettings" in q["sql"]]


def test_for_owner_reads_the_database_once_then_the_cache(owner):
    BusinessSettings.objects.create(owner=owner)
    BusinessSettings.for_owner(owner)
    with CaptureQueriesContext(connection) as queries:
        policy = BusinessSettings.for_owner(owner)
    assert settings_queries(queries) == []
    assert policy.owner is owner
    assert policy.cooldown_days == BusinessSettings.objects.get(owner=owner).cooldown_days


def test_for_owner_sees_an_update_through_the_service_at_once(owner):
    BusinessSettings.for_owner(owner)
    business_settings_update(owner=owner, changes={"cooldown_days": 7})
    assert BusinessSettings.for_owner(owner).cooldown_days == 7


def test_for_owner_sees_a_plain_save_at_once(owner):
    policy = BusinessSettings.for_owner(owner)
    row = BusinessSettings.objects.get(pk=policy.pk)
    row.follow_up_offsets_hours = [24]
    row.save()
    assert BusinessSettings.for_owner(owner).follow_up_offsets_hours == [24]


def test_for_owner_never_serves_a_row_read_before_a_concurrent_save(owner):
    BusinessSettings.for_owner(owner)
    key = BusinessSettings.cache_key(owner.pk)
    versioned_cache.invalidate([key], ttl=BusinessSettings.CACHE_SECONDS)
    state = versioned_cache.read(key)  # a reader misses and loads the old row...
    old = {f.attname: getattr(o, f.attname) for o in [BusinessSettings.objects.get(owner=owner)]
           for f in BusinessSettings._meta.concrete_fields}  # fmt: skip
    business_settings_update(owner=owner, changes={"cooldown_days": 9})  # ...the save commits...
    versioned_cache.write(state, old, timeout=60)  # ...and the reader writes late
    assert BusinessSettings.for_owner(owner).cooldown_days == 9


def test_for_owner_works_with_the_cache_down(owner, monkeypatch):
    monkeypatch.setattr(versioned_cache, "cache", DownCache())
    assert BusinessSettings.for_owner(owner).owner_id == owner.pk
    business_settings_update(owner=owner, changes={"cooldown_days": 5})
    assert BusinessSettings.for_owner(owner).cooldown_days == 5


def _template(owner, **kwargs):
    kwargs.setdefault("channel", "sms")
    kwargs.setdefault("step", 0)
    return MessageTemplate(owner=owner, **kwargs)


def test_sms_template_gets_the_stop_line_appended_when_it_has_none(business):
    template = _template(business, body="Hi {first_name}! Review {business_name}: {review_link}")
    template.full_clean()
    assert template.body.endswith("\nReply STOP to opt out")
    kept = _template(business, body="{business_name}: {review_link} Text STOP to stop", step=1)
    kept.full_clean()
    assert kept.body == "{business_name}: {review_link} Text STOP to stop"


def test_sms_template_must_name_the_business(business):
    with pytest.raises(ValidationError, match="must name the business"):
        _template(business, body="Hi {first_name}: {review_link}").full_clean()
    named = _template(business, body="Hi from Acme Plumbing: {review_link}")
    named.full_clean()  # the literal name counts too


def test_template_refuses_unknown_fields_and_needs_the_review_link(business):
    with pytest.raises(ValidationError) as error:
        _template(business, body="{business_name} {coupon_code} {review_link}").full_clean()
    assert "Unknown merge field {coupon_code}" in str(error.value)
    with pytest.raises(ValidationError, match=r"Must contain \{review_link\}"):
        _template(business, body="{business_name} says hi").full_clean()


def test_email_template_needs_a_valid_one_line_subject(business):
    with pytest.raises(ValidationError, match="needs a subject"):
        _template(business, channel="email", body="{review_link}").full_clean()
    with pytest.raises(ValidationError, match="Unknown merge field"):
        _template(business, channel="email", subject="{oops}", body="{review_link}").full_clean()
    ok = _template(
        business, channel="email", subject="  Thanks\n{first_name} ", body="{review_link}"
    )
    ok.full_clean()
    assert ok.subject == "Thanks {first_name}"


def test_sample_segment_count_is_shown_for_sms_templates(business):
    template = _template(business, body="{business_name} {review_link}")
    template.full_clean()
    assert template.sample_segments().segments == 1
    long = _template(business, body="{business_name} " + "x" * 200 + " {review_link}")
    long.full_clean()
    assert long.sample_segments().segments == 2
    assert _template(business, channel="email", body="x").sample_segments() is None


def test_listed_for_row_asks_each_rows_own_location(owner):
    """``owner`` lists one site, with no location: its default location's. A request at the
    default (by id or with no location) finds it; one at another location does not, until
    that location lists its own."""
    default = first_location(owner)
    other = LocationFactory(account=owner)
    at_default = ReviewRequestFactory(contact__owner=owner, location=default)
    unplaced = ReviewRequestFactory(contact__owner=owner, location=None)
    elsewhere = ReviewRequestFactory(contact__owner=owner, location=other)
    siteless = ReviewRequestFactory(location=None)  # another business, which lists none

    def listed() -> dict:
        rows = ReviewRequest.objects.annotate(listed=ReviewSite.listed_for_row())
        return dict(rows.values_list("pk", "listed"))

    assert listed() == {
        at_default.pk: True,
        unplaced.pk: True,
        elsewhere.pk: False,
        siteless.pk: False,
    }
    ReviewSite.objects.update(location=default)  # pinned: the same for every row
    ReviewSiteFactory(owner=owner, location=other)
    assert listed() == {
        at_default.pk: True,
        unplaced.pk: True,
        elsewhere.pk: True,
        siteless.pk: False,
    }
