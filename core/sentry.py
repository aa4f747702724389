"""Error tracking: Sentry, on when ``SENTRY_DSN`` is set (``CoreConfig.ready``, every process).

Django and Celery integrations (unhandled errors, ``logger.error`` lines, task failures; the
trace continues from a request into the tasks it publishes). No personal data leaves: Sentry
collects no user identity (``data_collection``, formerly ``send_default_pii=False``), and
``scrub_event`` replaces
e-mail addresses and phone numbers anywhere in an event (messages, request bodies, local
variables of stack frames) before it is sent. Every event carries the request id as a tag.
"""

from __future__ import annotations

import re
from typing import Any

import sentry_sdk
from django.conf import settings
from sentry_sdk.integrations.celery import CeleryIntegration
from sentry_sdk.integrations.django import DjangoIntegration
from sentry_sdk.types import Event, Hint

from .request_id import request_id_var

EMAIL = re.compile(r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
# E.164 as stored (+14155552671), and national formats such as (415) 555-2671 or 415.555.2671.
PHONE = re.compile(r"\+\d{7,15}\b|\(?\b\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}\b")
FILTERED = "[Filtered]"


def sentry_init(**options: Any) -> None:
    """Start the SDK from the settings; ``options`` add to them (tests pass a transport)."""
    sentry_sdk.init(
        dsn=settings.SENTRY_DSN,
        environment=settings.SENTRY_ENVIRONMENT,
        release=settings.SENTRY_RELEASE,
        traces_sample_rate=settings.SENTRY_TRACES_SAMPLE_RATE,
        # What send_default_pii=False meant (the option is deprecated in favour of this): no
        # user identity, client address or cookies.
        data_collection={"user_info": False},
        integrations=[DjangoIntegration(), CeleryIntegration()],
        before_send=before_send,
        before_send_transaction=before_send,
        **options,
    )


def before_send(event: Event, hint: Hint) -> Event:
    request_id = request_id_var.get()
    if request_id:
        event.setdefault("tags", {})["request_id"] = request_id
    scrubbed: Event = scrub_event(event)
    return scrubbed


def scrub_event(value: Any) -> Any:
    """A copy of ``value`` with every e-mail address and phone number in its strings (keys
    included) replaced by ``[Filtered]``."""
    if isinstance(value, str):
        return PHONE.sub(FILTERED, EMAIL.sub(FILTERED, value))
    if isinstance(value, dict):
        return {scrub_event(key): scrub_event(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(scrub_event(item) for item in value)
    return value
