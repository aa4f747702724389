"""manage.py rebuild_activity_rollup: the rebuilt rollup gives the dashboards the numbers of the
base tables."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from activity import owner_dashboard, selectors
from activity.dashboard import staff_dashboard
from activity.models import ActivityRollup, ActivityRollupState
from tests.activity.conftest import hour_start, numbers

pytestmark = pytest.mark.django_db


def test_the_rebuild_gives_the_dashboards_the_numbers_of_the_base_tables(business, activity):
    live = [numbers(staff_dashboard(owner_id=owner)) for owner in (business.pk, None)]
    live_activity = owner_dashboard.activity(owner=business, days=None)
    call_command("rebuild_activity_rollup", stdout=StringIO())
    assert ActivityRollup.objects.exists()
    state = ActivityRollupState.objects.get()
    assert state.covered_from is None and state.closed_until == hour_start(timezone.now())
    since = hour_start(activity["now"]) - timedelta(days=30)
    assert selectors.activity_rollup_boundary(since=since) == state.closed_until
    assert [numbers(staff_dashboard(owner_id=owner)) for owner in (business.pk, None)] == live
    assert owner_dashboard.activity(owner=business, days=None) == live_activity
