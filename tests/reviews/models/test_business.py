"""A business's settings (reviews.models.business): validated by the model, read from the cache,
every save reaching it at once."""

from __future__ import annotations

from datetime import time

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core import versioned_cache
from reviews.models import BusinessSettings
from reviews.services import business_settings_update
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
