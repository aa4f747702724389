"""Errors reach Sentry with the request id and without e-mail addresses or phone numbers."""

from __future__ import annotations

import json
from typing import Any

import pytest
import sentry_sdk
from sentry_sdk.envelope import Envelope
from sentry_sdk.transport import Transport

from core.sentry import scrub_event, sentry_init

pytestmark = [pytest.mark.urls("tests.support.error_urls"), pytest.mark.django_db]


class RecordingTransport(Transport):
    """Sentry's network boundary: keeps the envelopes instead of posting them."""

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.events: list[dict[str, Any]] = []

    def capture_envelope(self, envelope: Envelope) -> None:
        for item in envelope.items:
            if item.type == "event":
                self.events.append(json.loads(item.payload.get_bytes()))


@pytest.fixture
def sentry(settings):
    settings.SENTRY_DSN = "https://public@sentry.example.com/1"
    transport = RecordingTransport()
    sentry_init(transport=transport)
    try:
        yield transport
    finally:
        sentry_sdk.get_client().close()
        # Off again for the rest of the worker's tests, as without SENTRY_DSN: no client, so
        # the integrations patched into Django, Celery... return at once (an init() without a
        # DSN would leave them tracing every query of every later test).
        sentry_sdk.get_global_scope().set_client(None)
        assert not sentry_sdk.get_client().is_active()


def test_a_server_error_reaches_sentry_tagged_with_the_request_id_and_scrubbed(api_client, sentry):
    response = api_client.post(
        "/api/crash",
        {"email": "jane.doe@example.com", "phone": "+14155552671"},
        format="json",
    )
    sentry_sdk.flush()

    assert response.status_code == 500
    (event,) = sentry.events
    assert event["tags"]["request_id"] == response["X-Request-ID"]
    assert event["release"] == "0.1.0"
    assert "RuntimeError" in json.dumps(event)
    text = json.dumps(event)
    assert "jane.doe@example.com" not in text
    assert "4155552671" not in text
    assert "[Filtered]" in text


def test_scrubbing_keeps_what_is_not_personal():
    event = {
        "timestamp": "2026-11-26T05:14:45.113+00:00",
        "message": "call (415) 555-2671 or mail ann@example.org about message 123456",
        "extra": {"ids": ["bob@example.net", 42]},
    }
    assert scrub_event(event) == {
        "timestamp": "2026-11-26T05:14:45.113+00:00",
        "message": "call [Filtered] or mail [Filtered] about message 123456",
        "extra": {"ids": ["[Filtered]", 42]},
    }
