"""Scheduled cleanup of expired tokens, grants and our own records (oauth_provider.tasks)."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.conf import settings
from django.utils import timezone
from oauth2_provider.models import (
    get_access_token_model,
    get_grant_model,
    get_refresh_token_model,
)

from config.celery import app
from oauth_provider.models import Connection, RedeemedCode
from oauth_provider.tasks import clear_expired_tokens
from tests.oauth_provider.conftest import OAuthFlow
from tests.support.row_counts import statement_row_counts

pytestmark = pytest.mark.django_db

AccessToken = get_access_token_model()
RefreshToken = get_refresh_token_model()
Grant = get_grant_model()


def test_cleanup_runs_hourly_from_beat():
    entry = settings.CELERY_BEAT_SCHEDULE["oauth-clear-expired"]
    assert entry == {"task": "oauth_provider.tasks.clear_expired_tokens", "schedule": 3600}
    app.loader.import_default_modules()
    assert entry["task"] in app.tasks


def test_cleanup_keeps_live_connections_and_recent_tombstones(flow):
    first = flow.connect()
    flow.refresh(first.refresh_token)
    clear_expired_tokens()
    assert Connection.objects.count() == 1
    assert RefreshToken.objects.count() == 2  # the rotated one stays: reuse detection needs it
    assert AccessToken.objects.count() == 1
    assert RedeemedCode.objects.count() == 1


def test_cleanup_removes_what_expired(flow, owner, application):
    first = flow.connect()
    flow.refresh(first.refresh_token)
    flow.code()  # an authorization code nobody redeemed
    with time_machine.travel(timezone.now() + timedelta(days=95)):
        fresh = OAuthFlow(owner, application).connect()
        clear_expired_tokens()

        # The idle connection is gone entirely: tokens, tombstones, record and connection.
        assert list(Connection.objects.all()) == [
            Connection.objects.get(pk=RefreshToken.objects.get().token_family)
        ]
        assert RedeemedCode.objects.count() == 1
        assert not Grant.objects.exists()
        # The fresh one is untouched.
        assert (
            OAuthFlow(owner, application).api(fresh.access_token).get("/api/zapier/me").status_code
            == 200
        )


def test_redeemed_code_records_are_purged_after_a_day(flow):
    flow.connect()
    with time_machine.travel(timezone.now() + timedelta(days=1, minutes=1)):
        clear_expired_tokens()
    assert not RedeemedCode.objects.exists()
    assert Connection.objects.count() == 1  # still has live tokens


def test_redeemed_codes_are_purged_in_bounded_batches(flow, settings):
    settings.PURGE_BATCH_SIZE = 2
    flow.connect()
    connection = Connection.objects.get()
    RedeemedCode.objects.bulk_create(
        RedeemedCode(code_digest=f"{n:064d}", connection=connection) for n in range(5)
    )
    later = timezone.now() + timedelta(days=1, minutes=1)
    with time_machine.travel(later), statement_row_counts() as counts:
        clear_expired_tokens()
    assert max(counts) <= 2
    assert not RedeemedCode.objects.exists()
    assert Connection.objects.count() == 1
