"""End to end on PostgreSQL and Redis with the real processes (gunicorn, Celery worker, beat):
a hook subscribed through the API receives a real click's event, signed, within seconds; and a
worker killed with SIGKILL in the middle of a delivery loses nothing."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import signal
import time
from pathlib import Path

import pytest
import requests
from celery import current_app
from django.db import transaction

from events.models import EventType, WebhookDelivery
from events.services import DELIVER_TASK, event_record, webhook_subscription_create
from reviews.models import BusinessSettings
from tests.factories import ReviewSiteFactory, UserFactory
from tests.reviews.test_faults import worker_processes
from tests.support.oauth import issue_tokens
from tests.support.processes import ServiceProcesses
from tests.support.webhook_receiver import WebhookReceiver

pytestmark = [
    pytest.mark.processes,
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.timeout(240),
    pytest.mark.django_db(transaction=True),
]

HUMAN = "Mozilla/5.0 (Linux; Android 14) AppleWebKit/537.36 Chrome/120.0 Mobile Safari/537.36"
LINK = re.compile(r"https?://[^\s\"<>]+/r/[A-Za-z0-9_-]+/")
ENV = {"WEBHOOK_ALLOW_PRIVATE_TARGETS": "true", "DISPATCH_INTERVAL_SECONDS": "1"}


def signature_valid(secret: str, headers: dict[str, str], body: bytes) -> bool:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    return hmac.compare_digest(headers["webhook-signature"], expected)


@pytest.fixture
def receiver():
    server = WebhookReceiver().start()
    yield server
    server.stop()


def test_a_click_reaches_a_hook_subscribed_through_the_api(tmp_path, receiver):
    owner = UserFactory(business_name="Acme Plumbing")
    BusinessSettings.objects.create(
        owner=owner, send_window_applies_to=BusinessSettings.WindowAppliesTo.NONE
    )
    ReviewSiteFactory(owner=owner, label="Google", url="https://g.page/r/acme/review")
    access, _ = issue_tokens(owner)
    service = ServiceProcesses(tmp_path, ["web", "worker", "beat"], env=ENV)
    with service as svc:
        svc.wait_for(lambda: requests.get(f"{svc.base_url}/healthz", timeout=2).ok, what="web")
        api = requests.Session()
        api.headers["Authorization"] = f"Bearer {access}"
        hook = api.post(
            f"{svc.base_url}/api/zapier/hooks",
            json={"target_url": receiver.url, "event": "review_request.clicked"},
            timeout=10,
        )
        assert hook.status_code == 201, hook.text
        secret = hook.json()["secret"]
        added = api.post(
            f"{svc.base_url}/api/zapier/send-review-request",
            json={"first_name": "Jane", "email": "jane@example.com"},
            timeout=10,
        )
        assert added.status_code == 201, added.text
        outbox = tmp_path / "outbox"
        eml = svc.wait_for(
            lambda: sorted(p for p in outbox.glob("*.eml") if not p.name.startswith(".")),
            timeout=60,
            what="the e-mail in the outbox",
        )[0]
        page = LINK.search(Path(eml).read_text()).group(0)
        time.sleep(1.5)  # a fetch within a second of the send is a scanner's, not a click
        html = requests.get(page, timeout=10).text
        go = re.search(r'href="(/r/[^"]+/go/[^"]+/)"', html).group(1)
        clicked_at = time.monotonic()
        opened = requests.get(
            svc.base_url + go, headers={"User-Agent": HUMAN}, allow_redirects=False, timeout=10
        )
        assert opened.status_code == 302
        (call,) = svc.wait_for(receiver.received, timeout=30, what="the click's webhook")
        latency = time.monotonic() - clicked_at
        assert latency < 10, latency  # the on-commit kick, not beat's minute
        body = call.json
        assert body["type"] == "review_request.clicked"
        assert body["data"]["id"] == added.json()["id"]
        assert body["data"]["status"] == "clicked" and body["data"]["click"]["site"] == "Google"
        assert call.headers["webhook-id"] == body["id"]
        assert signature_valid(secret, call.headers, call.body)
        delivery = WebhookDelivery.objects.get()
        assert (delivery.status, delivery.attempts) == ("delivered", 1)


def test_a_worker_killed_mid_delivery_loses_nothing(tmp_path, receiver, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    owner = UserFactory()
    webhook_subscription_create(
        owner=owner, event=EventType.FEEDBACK_RECEIVED, target_url=receiver.url
    )
    receiver.hang_seconds = 4  # the first call is still waiting for its answer when killed
    env = {**ENV, "WEBHOOK_LEASE_SECONDS": "3", "WEBHOOK_TIMEOUT_SECONDS": "20"}
    with ServiceProcesses(tmp_path / "w1", ["worker"], env=env) as worker:
        with transaction.atomic():
            event = event_record(
                owner_id=owner.pk, type=EventType.FEEDBACK_RECEIVED, data={"id": "x"}
            )
        worker.wait_for(lambda: receiver.arrivals, timeout=60, what="the call under way")
        main, _ = worker_processes(worker)
        os.killpg(os.getpgid(main), signal.SIGKILL)
        worker.proc.wait(20)
    assert WebhookDelivery.objects.get().status == "pending"  # claimed, outcome never recorded
    receiver.hang_seconds = 0
    with ServiceProcesses(tmp_path / "w2", ["worker"], env=env) as worker:
        time.sleep(3)  # the lease runs out
        current_app.send_task(DELIVER_TASK)  # what beat's next run does
        worker.wait_for(
            lambda: WebhookDelivery.objects.get().status == "delivered",
            timeout=60,
            what="the delivery after the lease",
        )
    delivery = WebhookDelivery.objects.get()
    assert delivery.attempts == 2  # at least once: the receiver dedupes by webhook-id
    assert {c.headers["webhook-id"] for c in receiver.received()} == {str(event.id)}
