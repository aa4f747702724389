"""What the fault tests share (tests/e2e/processes/test_faults*.py): the contacts each run sends,
the processes' environment, and the checks that no message was accepted twice and that, once
reconciled and resent, every message was accepted exactly once."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.test.utils import override_settings

from reviews.models import BusinessSettings, Message
from reviews.services import contact_add, message_resend, messages_reconcile_unknown
from tests.factories import ReviewSiteFactory, UserFactory
from tests.support.contacts import contact_input
from tests.support.delivery import TWILIO_SID, TWILIO_TOKEN
from tests.support.fake_providers import FakeProviders
from tests.support.processes import ServiceProcesses

MESSAGES = 40
LATENCY = 0.25  # per provider call: a batch takes a few seconds, long enough to hit mid-way
SETTLED = {"sent", "delivered", "unknown", "failed", "cancelled"}
FROM_NUMBER = "+15005550006"


def phone(i: int) -> str:
    return f"+1415555{3000 + i:04d}"


def process_env(fake: FakeProviders, redis_url: str, **extra: str) -> dict[str, str]:
    return {
        "REDIS_URL": redis_url,
        "TWILIO_ACCOUNT_SID": TWILIO_SID,
        "TWILIO_AUTH_TOKEN": TWILIO_TOKEN,
        "TWILIO_FROM_NUMBER": FROM_NUMBER,
        "TWILIO_API_BASE_URL": fake.url,
        "DISPATCH_INTERVAL_SECONDS": "1",
        # Short leases so recovery happens within the test; the sending lease still outlives
        # the task's hard time limit, as the settings require.
        "DELIVERY_QUEUED_LEASE_SECONDS": "6",
        "DELIVERY_SENDING_LEASE_SECONDS": "12",
        "CELERY_TASK_SOFT_TIME_LIMIT": "8",
        "CELERY_TASK_TIME_LIMIT": "10",
        "DELIVERY_CONNECT_TIMEOUT": "2",
        "DELIVERY_READ_TIMEOUT": "4",
        "HEARTBEAT_INTERVAL": "3600",
        "SITE_URL": settings.SITE_URL,  # one public URL for every process, as in production
        **extra,
    }


def seed(monkeypatch) -> list[str]:
    """MESSAGES contacts due now, SMS only, no follow-ups, no quiet hours."""
    monkeypatch.setattr("reviews.services.contacts.dispatcher_kick", lambda: None)  # beat sweeps
    owner = UserFactory.create(business_name="Acme Plumbing")
    ReviewSiteFactory(owner=owner)  # without one, nothing is sent
    BusinessSettings.objects.create(
        owner=owner, send_window_applies_to="none", follow_up_offsets_hours=[]
    )
    for i in range(MESSAGES):
        contact_add(
            owner=owner,
            data=contact_input(owner, {"mobile_phone_number": phone(i), "delay_hours": 0}),
        )
    return [str(pk) for pk in Message.objects.values_list("pk", flat=True)]


def statuses(ids: list[str]) -> dict[str, str]:
    return {str(k): v for k, v in Message.objects.filter(pk__in=ids).values_list("pk", "status")}


def assert_at_most_once(fake: FakeProviders, found: dict[str, str]) -> None:
    """No message accepted twice; sent ones exactly once; nothing left in flight."""
    counts = fake.counts()
    assert set(counts) <= set(found), "the provider got messages we never had"
    assert max(counts.values(), default=0) <= 1, f"accepted twice: {counts.most_common(3)}"
    assert set(found.values()) <= {"sent", "unknown"}, found
    for message_id, status in found.items():
        if status == "sent":
            assert counts[message_id] == 1, message_id


def reconcile_and_resend(fake: FakeProviders, ids: list[str], services: ServiceProcesses) -> None:
    """Learn what happened to unknown messages; resend those the provider never received."""
    with override_settings(
        TWILIO_ACCOUNT_SID=TWILIO_SID,
        TWILIO_AUTH_TOKEN=TWILIO_TOKEN,
        TWILIO_FROM_NUMBER=FROM_NUMBER,
        TWILIO_API_BASE_URL=fake.url,
    ):
        messages_reconcile_unknown(older_than=timedelta(0))
    found = statuses(ids)
    counts = fake.counts()
    for message_id, status in found.items():
        if status == "failed":
            assert counts[message_id] == 0  # reconciled as never received: safe to resend
            message_resend(message_id=message_id)
        else:
            assert status == "sent" and counts[message_id] == 1
    services.wait_for(
        lambda: set(statuses(ids).values()) == {"sent"}, timeout=60, what="resends sent"
    )
    assert fake.counts() == dict.fromkeys(ids, 1)  # every message exactly once, in the end
