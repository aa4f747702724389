"""reviews 0012: the daily rollup, filled from the hours already rolled up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.factories import UserFactory
from tests.support.migrations import migrate, migrated_to

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
BEFORE_DAILY = [("reviews", "0011_contact_address_keys")]
DAILY = [("reviews", "0012_activity_daily_rollup")]


def test_the_daily_rollup_is_filled_from_the_hours_already_rolled_up(transactional_db):
    with migrated_to(BEFORE_DAILY) as apps:
        owner, other = UserFactory(), UserFactory()
        hourly = apps.get_model("reviews", "ActivityRollup")
        for at, who, metric, count in [
            (T0, owner, "sent", 2),
            (T0 + timedelta(hours=5), owner, "sent", 3),
            (T0 + timedelta(days=1), owner, "sent", 7),
            (T0, owner, "clicked", 1),
            (T0, other, "sent", 4),
        ]:
            hourly.objects.create(owner_id=who.pk, hour=at, metric=metric, count=count)

        daily = migrate(DAILY).get_model("reviews", "ActivityDailyRollup")

        rows = daily.objects.values_list("owner_id", "day", "metric", "count")
        assert set(rows) == {
            (owner.pk, T0.date(), "sent", 5),
            (owner.pk, T0.date() + timedelta(days=1), "sent", 7),
            (owner.pk, T0.date(), "clicked", 1),
            (other.pk, T0.date(), "sent", 4),
        }
