"""Fixtures of the events tests: a webhook receiver on loopback, and subscriptions to it."""

from __future__ import annotations

import pytest

from events.models import WebhookSubscription
from events.services import webhook_subscription_create
from tests.support.webhook_receiver import WebhookReceiver


@pytest.fixture
def receiver():
    server = WebhookReceiver().start()
    yield server
    server.stop()


@pytest.fixture
def allow_loopback(settings):
    """Loopback targets over http: what WEBHOOK_ALLOW_PRIVATE_TARGETS is for (tests, dev)."""
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    settings.WEBHOOK_TIMEOUT_SECONDS = 1.0


def subscribe(owner, event: str, url: str) -> WebhookSubscription:
    return webhook_subscription_create(owner=owner, event=event, target_url=url)
