"""``manage.py rebuild_activity_rollup``: recompute the dashboards' rollup from the base tables.

Run it after restoring a database (the rollup of a backup may lag its base tables), once
after the migration that adds the rollup (the backfill), and after migrating ``activity`` back
from 0002 (which empties it): until then the dashboards read the base tables for the periods
the rollup does not cover. Not needed after 0002 itself: the refreshes re-derive, by location,
the hours rolled up before it. Safe while the service runs: it holds the
rollup's lock (a refresh waits), and readers see the old rollup until it commits.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand

from activity import services


class Command(BaseCommand):
    help = (
        "Recompute the dashboards' rollup (events per owner, location and hour, and per day) "
        "from the base tables."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.perf_counter()
        done = services.activity_rollup_rebuild()
        self.stdout.write(
            f"Rolled up {done.start:%Y-%m-%d %H:00} to {done.end:%Y-%m-%d %H:00} UTC: "
            f"{done.rows} rows in {time.perf_counter() - started:.1f} s."
        )
