"""The rollup's refresh task: beat sends it, and a worker runs it, by the name it had in reviews,
so a refresh queued by the previous release still runs after the move."""

from __future__ import annotations

from django.conf import settings

from activity.tasks import refresh_activity_rollup
from config.celery import app


def test_the_refresh_runs_from_beat_by_its_name_from_reviews():
    entry = settings.CELERY_BEAT_SCHEDULE["refresh-activity-rollup"]
    assert entry["task"] == "reviews.tasks.refresh_activity_rollup"
    app.loader.import_default_modules()
    assert app.tasks[entry["task"]].run is refresh_activity_rollup.run
