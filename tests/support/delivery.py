"""Fixtures and helpers of the delivery tests: a business, its requests, and fake providers on
loopback. The fixtures are loaded by tests/conftest.py."""

from __future__ import annotations

import itertools

import pytest
from django.test.utils import override_settings

from config.celery import app as celery_app
from reviews.models import BusinessSettings, Message, ReviewRequest
from reviews.services import (
    contact_add,
    message_send,
    messages_dispatch_due,
)
from reviews.services.dispatch import SEND_TASK
from tests.factories import ReviewSiteFactory, UserFactory
from tests.support.contacts import contact_input
from tests.support.fake_providers import FakeProviders

_phones = itertools.count(2000)


def new_phone() -> str:
    """A distinct, valid San Francisco number per call."""
    return f"+1415555{next(_phones):04d}"


@pytest.fixture
def business(db):
    owner = UserFactory(business_name="Acme Plumbing", time_zone="America/New_York")
    BusinessSettings.objects.create(
        owner=owner,
        send_window_applies_to=BusinessSettings.WindowAppliesTo.NONE,
        postal_address="1 Main St\nSpringfield, IL 62701",
    )
    ReviewSiteFactory(owner=owner, label="Google", url="https://g.page/r/acme/review")
    ReviewSiteFactory(
        owner=owner, kind="facebook", label="Facebook", url="https://facebook.com/acme/reviews"
    )
    return owner


def request_for(owner, **data) -> ReviewRequest:
    data.setdefault("first_name", "Jane")
    data.setdefault("delay_hours", 0)
    return contact_add(owner=owner, data=contact_input(owner, data)).review_request


def sms_request(owner, **data) -> ReviewRequest:
    return request_for(owner, mobile_phone_number=data.pop("phone", None) or new_phone(), **data)


def email_request(owner, **data) -> ReviewRequest:
    data.setdefault("email", f"jane{next(_phones)}@example.com")
    return request_for(owner, **data)


def step(request: ReviewRequest, n: int) -> Message:
    return request.messages.get(step=n)


def dispatch_and_send() -> list[str]:
    """What beat + a worker do, in-process: claim due rows, run each send task once."""
    result = messages_dispatch_due()
    return [message_send(message_id=message_id) for message_id in result.claimed]


@pytest.fixture
def fake():
    with FakeProviders() as providers:
        yield providers


TWILIO_SID = "AC" + "0" * 32
TWILIO_TOKEN = "test-auth-token"


@pytest.fixture
def twilio(fake):
    """Real Twilio client, fake Twilio API."""
    with override_settings(
        TWILIO_ACCOUNT_SID=TWILIO_SID,
        TWILIO_AUTH_TOKEN=TWILIO_TOKEN,
        TWILIO_FROM_NUMBER="+15005550006",
        TWILIO_API_BASE_URL=fake.url,
        DELIVERY_READ_TIMEOUT=0.5,
        DELIVERY_CONNECT_TIMEOUT=0.5,
    ):
        fake.hang_seconds = 1.5
        yield fake


@pytest.fixture
def postmark(fake):
    """anymail's real Postmark backend, fake Postmark API."""
    with override_settings(
        EMAIL_BACKEND="anymail.backends.postmark.EmailBackend",
        ANYMAIL={
            "POSTMARK_SERVER_TOKEN": "test-server-token",
            "POSTMARK_API_URL": fake.postmark_url,
            "REQUESTS_TIMEOUT": (0.5, 0.5),
        },
    ):
        fake.hang_seconds = 1.5
        yield fake


@pytest.fixture
def outbox_email(settings):
    """The embedded default's e-mail backend (tests otherwise use Django's locmem)."""
    settings.EMAIL_BACKEND = "providers.outbox.OutboxEmailBackend"
    return settings.OUTBOX_DIR


def publish_send_tasks_to(monkeypatch, publish) -> None:
    """The dispatcher's send tasks go to ``publish(message_ids)`` instead of the broker (which
    Celery's own tests cover); other tasks are dropped."""

    def send_task(name, args=None, **options):
        if name == SEND_TASK:
            publish(*args)

    monkeypatch.setattr(celery_app, "send_task", send_task)


# The merge values of a sample message (every field a template may name).
VALUES = {
    "first_name": "Jane",
    "contact_name": "Jane Smith",
    "business_name": "Acme <b>Plumbing</b>",
    "review_link": "https://reviews.example.com/r/abc/",
    "company_name": "Smith & Co",
}


@pytest.fixture
def siteless(db):
    """A business created without ``--review-url``: no review site yet."""
    owner = UserFactory(business_name="Acme Plumbing", time_zone="America/New_York")
    BusinessSettings.objects.create(
        owner=owner, send_window_applies_to=BusinessSettings.WindowAppliesTo.NONE
    )
    return owner


def reload(obj):
    obj.refresh_from_db()
    return obj
