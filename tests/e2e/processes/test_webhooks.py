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
from django.core.cache import cache
from django.db import transaction
from twilio.request_validator import RequestValidator

from events.models import EventType, WebhookDelivery
from events.services import DELIVER_TASK, event_record, webhook_subscription_create
from reviews.models import BusinessSettings, Message, ReviewRequest
from reviews.services.engagement import ip_hash
from tests.factories import ReviewSiteFactory, UserFactory
from tests.support.oauth import issue_tokens
from tests.support.processes import ServiceProcesses, worker_processes
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


def test_each_outcome_reaches_the_receiver_signed(tmp_path, receiver, settings):
    """The acceptance run: a completion, a click, private feedback, an opt-out by the e-mail
    link and one by SMS STOP, and a failure reported by the provider, each through the real web
    process, recorded there and delivered by the real worker, with a valid signature."""
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True  # subscribing here, to the loopback receiver
    single_step = UserFactory(business_name="Acme Plumbing")  # its requests complete when sent
    BusinessSettings.objects.create(
        owner=single_step,
        send_window_applies_to=BusinessSettings.WindowAppliesTo.NONE,
        follow_up_offsets_hours=[],
    )
    ReviewSiteFactory(owner=single_step, label="Google", url="https://g.page/r/acme/review")
    by_sms = UserFactory(business_name="Bolt Electric")  # follow-ups: a failure ends it
    BusinessSettings.objects.create(
        owner=by_sms, send_window_applies_to=BusinessSettings.WindowAppliesTo.NONE
    )
    ReviewSiteFactory(owner=by_sms, label="Google", url="https://g.page/r/bolt/review")
    base = f"http://127.0.0.1:{receiver.port}"
    secrets = {}
    for owner, types in {
        single_step: [
            EventType.REVIEW_REQUEST_COMPLETED,
            EventType.REVIEW_REQUEST_CLICKED,
            EventType.FEEDBACK_RECEIVED,
            EventType.CONTACT_OPTED_OUT,
        ],
        by_sms: [EventType.CONTACT_OPTED_OUT, EventType.REVIEW_REQUEST_FAILED],
    }.items():
        for type in types:
            path = f"/{owner.business_name.split()[0].lower()}/{type}"
            secrets[path] = webhook_subscription_create(
                owner=owner, event=type, target_url=base + path
            ).secret
    token = "twilio-auth-token"
    env = {**ENV, "TWILIO_AUTH_TOKEN": token}  # verifies Twilio's webhooks; SMS go to files
    with ServiceProcesses(tmp_path, ["web", "worker", "beat"], env=env) as svc:
        svc.wait_for(lambda: requests.get(f"{svc.base_url}/healthz", timeout=2).ok, what="web")
        requests_by_name = {}
        for owner, name, contact in [
            (single_step, "jane", {"email": "jane@example.com"}),
            (single_step, "bob", {"email": "bob@example.com"}),
            (by_sms, "sam", {"mobile_phone_number": "+14155552671"}),
            (by_sms, "tom", {"mobile_phone_number": "+14155552672"}),
        ]:
            access, _ = issue_tokens(owner)
            added = requests.post(
                f"{svc.base_url}/api/zapier/send-review-request",
                json={"first_name": name.title(), **contact},
                headers={"Authorization": f"Bearer {access}"},
                timeout=10,
            )
            assert added.status_code == 201, added.text
            requests_by_name[name] = added.json()["id"]
        svc.wait_for(
            lambda: all(
                Message.objects.filter(review_request_id=i, step=0, status="sent").exists()
                for i in requests_by_name.values()
            ),
            timeout=60,
            what="every first message sent",
        )
        time.sleep(1.5)  # a fetch within a second of the send is a scanner's, not a click
        jane = ReviewRequest.objects.get(pk=requests_by_name["jane"])
        browser = requests.Session()
        page = browser.get(f"{svc.base_url}/r/{jane.token}/", timeout=10).text
        go = re.search(r'href="(/r/[^"]+/go/[^"]+/)"', page).group(1)
        assert (
            browser.get(
                svc.base_url + go, headers={"User-Agent": HUMAN}, allow_redirects=False, timeout=10
            ).status_code
            == 302
        )
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        cache.delete(f"reviews:feedback:{ip_hash('127.0.0.1')}")  # earlier tests' feedback
        assert (
            browser.post(
                f"{svc.base_url}/r/{jane.token}/feedback/",
                data={"csrfmiddlewaretoken": csrf, "text": "The tap still drips."},
                allow_redirects=False,
                timeout=10,
            ).status_code
            == 302
        )
        bob = ReviewRequest.objects.get(pk=requests_by_name["bob"])
        assert requests.post(
            f"{svc.base_url}/unsubscribe/{bob.token}/",
            data={"List-Unsubscribe": "One-Click"},
            timeout=10,
        ).ok

        def twilio(path: str, params: dict[str, str]) -> None:
            url = svc.base_url + path
            signature = RequestValidator(token).compute_signature(url, params)
            answer = requests.post(
                url, data=params, headers={"X-Twilio-Signature": signature}, timeout=10
            )
            assert answer.status_code == 200, answer.text

        twilio(
            "/webhooks/twilio/inbound/",
            {"From": "+14155552671", "Body": "STOP", "MessageSid": "SM" + "1" * 32},
        )
        tom = Message.objects.get(review_request_id=requests_by_name["tom"], step=0)
        twilio(
            f"/webhooks/twilio/status/{tom.pk}/",
            {
                "MessageSid": tom.provider_message_id,
                "MessageStatus": "undelivered",
                "ErrorCode": "30003",
            },
        )
        expected = {
            ("/acme/review_request.completed", requests_by_name["jane"]),
            ("/acme/review_request.completed", requests_by_name["bob"]),
            ("/acme/review_request.clicked", requests_by_name["jane"]),
            ("/acme/feedback.received", requests_by_name["jane"]),
            ("/acme/contact.opted_out", requests_by_name["bob"]),
            ("/bolt/contact.opted_out", requests_by_name["sam"]),
            ("/bolt/review_request.failed", requests_by_name["tom"]),
        }
        svc.wait_for(
            lambda: {(c.path, c.json["data"]["id"]) for c in receiver.received()} >= expected,
            timeout=60,
            what="every event at the receiver",
        )
    calls = receiver.received()
    for call in calls:
        assert signature_valid(secrets[call.path], call.headers, call.body), call.path
        assert call.json["type"] == call.path.split("/")[2]
    by_path = {(c.path, c.json["data"]["id"]): c.json["data"] for c in calls}
    assert (
        by_path[("/acme/feedback.received", requests_by_name["jane"])]["feedback"]["text"]
        == "The tap still drips."
    )
    assert by_path[("/acme/contact.opted_out", requests_by_name["bob"])]["how"] == (
        "email_unsubscribe"
    )
    sam = by_path[("/bolt/contact.opted_out", requests_by_name["sam"])]
    assert (sam["how"], sam["channel"], sam["status"]) == ("sms_reply", "sms", "opted_out")
    assert by_path[("/bolt/review_request.failed", requests_by_name["tom"])]["status"] == "failed"
