"""events.services: delivery to a real HTTP receiver on loopback (signed, retried, removed on 410,
refused for private targets, and nothing lost while the receiver is down), and the outbox rule: an
event is written in the transaction of its change or not at all."""

from __future__ import annotations

import base64
import hashlib
import hmac
import socket
import time
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from django.db import transaction
from django.utils import timezone

from events import sender
from events.models import Event, EventType, WebhookDelivery, WebhookSubscription
from events.services import event_record, events_purge, retry_delay, webhooks_deliver_due
from tests.support.metrics import sample
from tests.support.webhook_receiver import WebhookReceiver, subscribe

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("allow_loopback")]

CLICKED = EventType.REVIEW_REQUEST_CLICKED


def record(owner, n: int = 1) -> list[Event | None]:
    with transaction.atomic():
        return [
            event_record(owner_id=owner.pk, type=CLICKED, data={"id": f"rr-{i}", "n": i})
            for i in range(n)
        ]


def verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """What a receiver does (docs/events.md), written here independently of the sender."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    return any(
        hmac.compare_digest(part.split(",", 1)[1], expected)
        for part in headers["webhook-signature"].split()
        if part.startswith("v1,")
    )


def delivery() -> WebhookDelivery:
    return WebhookDelivery.objects.select_related("subscription").get()


def make_due() -> None:
    WebhookDelivery.objects.filter(status="pending").update(next_attempt_at=timezone.now())


def test_a_delivery_is_signed_as_standard_webhooks_says(owner, receiver):
    subscription = subscribe(owner, CLICKED, receiver.url)
    (event,) = record(owner)
    report = webhooks_deliver_due()
    assert report.delivered == 1
    (call,) = receiver.received()
    assert call.path == "/hooks/catch"
    assert call.headers["content-type"] == "application/json"
    assert call.json == {
        "id": str(event.id),
        "type": "review_request.clicked",
        "occurred_at": event.occurred_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "data": {"id": "rr-0", "n": 0},
    }
    assert call.headers["webhook-id"] == str(event.id)
    assert abs(int(call.headers["webhook-timestamp"]) - time.time()) < 60
    assert verify(subscription.secret, call.headers, call.body)
    assert not verify("whsec_" + base64.b64encode(b"k" * 32).decode(), call.headers, call.body)
    row = delivery()
    assert (row.status, row.attempts, row.last_status_code) == ("delivered", 1, 200)
    assert row.delivered_at is not None and row.next_attempt_at is None
    assert webhooks_deliver_due().delivered == 0  # nothing twice


def test_410_gone_removes_the_subscription(owner, receiver):
    subscribe(owner, CLICKED, receiver.url)
    receiver.answer(410)
    record(owner)
    assert webhooks_deliver_due().removed == 1
    assert not WebhookSubscription.objects.exists()
    record(owner)  # later events: nobody to send them to
    assert not WebhookDelivery.objects.exists()


def test_a_500_is_retried_with_backoff_then_delivered(owner, receiver):
    subscription = subscribe(owner, CLICKED, receiver.url)
    receiver.answer(500)
    record(owner)
    before = timezone.now()
    assert webhooks_deliver_due().retried == 1
    row = delivery()
    assert (row.status, row.attempts, row.last_status_code) == ("pending", 1, 500)
    assert row.last_error.startswith("HTTP 500: xxx") and len(row.last_error) < 300
    # The first retry within a minute (15-30 s with the defaults), not at once.
    assert before + timedelta(seconds=14) < row.next_attempt_at < before + timedelta(seconds=31)
    assert webhooks_deliver_due().retried == 0  # not due yet
    row.subscription.refresh_from_db()
    assert row.subscription.failing_since is not None
    make_due()
    assert webhooks_deliver_due().delivered == 1
    assert len(receiver.received()) == 2
    assert (delivery().status, delivery().attempts) == ("delivered", 2)
    subscription.refresh_from_db()
    assert subscription.failing_since is None and subscription.is_active


def test_the_backoff_grows_with_jitter_up_to_its_cap(settings):
    delays = [retry_delay(n) for n in range(1, 12)]
    assert 15 <= delays[0] <= 30 and 30 <= delays[1] <= 60 and 60 <= delays[2] <= 120
    assert all(d >= settings.WEBHOOK_RETRY_MAX_SECONDS / 2 for d in delays[-3:])
    assert all(d <= settings.WEBHOOK_RETRY_MAX_SECONDS for d in delays)
    assert len({round(retry_delay(5), 3) for _ in range(20)}) > 1  # jitter
    # Retries last at least 24 hours.
    assert settings.WEBHOOK_RETRY_HOURS >= 24


def test_a_receiver_down_for_a_while_gets_every_event_after(owner, receiver):
    subscribe(owner, CLICKED, receiver.url)
    receiver.stop()
    events = record(owner, 3)
    assert webhooks_deliver_due().retried == 3
    assert all("could not connect" in d.last_error for d in WebhookDelivery.objects.all())
    receiver.start()
    make_due()
    assert webhooks_deliver_due().delivered == 3
    assert sorted(c.json["id"] for c in receiver.received()) == sorted(str(e.id) for e in events)


def test_a_slow_receiver_times_out_and_is_retried(owner, receiver, settings):
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.3
    receiver.hang_seconds = 1.0
    subscribe(owner, CLICKED, receiver.url)
    record(owner)
    assert webhooks_deliver_due().retried == 1
    assert delivery().last_error == "no answer within 0.3 s"


@pytest.mark.parametrize("drip", ["head", "body"])
def test_a_receiver_dripping_its_answer_is_cut_at_the_deadline(owner, receiver, settings, drip):
    """The timeout bounds the whole call, not each read: one byte every 0.5 s would otherwise
    keep the worker for minutes (each read comes well within any per-read timeout)."""
    settings.WEBHOOK_TIMEOUT_SECONDS = 1.0
    receiver.drip, receiver.drip_seconds = drip, 0.5
    subscribe(owner, CLICKED, receiver.url)
    record(owner)
    started = time.monotonic()
    report = webhooks_deliver_due()
    took = time.monotonic() - started
    assert report.retried == 1 and report.delivered == 0
    assert took < 2.5, took
    row = delivery()
    assert (row.status, row.attempts, row.last_status_code) == ("pending", 1, None)
    assert row.last_error == "no answer within 1 s"
    assert row.next_attempt_at > timezone.now() + timedelta(seconds=10)  # a retry, later


def test_the_call_goes_to_the_address_that_was_checked(owner, receiver, monkeypatch):
    """DNS rebinding: the name resolves to an allowed address when checked and elsewhere a
    moment later. The call connects to the checked address, and still names the host."""
    url = f"http://hooks.rebind.test:{receiver.port}/hooks/catch"
    real = socket.getaddrinfo
    answers = {"hooks.rebind.test": [real("127.0.0.1", receiver.port, type=socket.SOCK_STREAM)]}
    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda host, *args, **kwargs: (
            answers[host].pop() if answers.get(host) else real(host, *args, **kwargs)
        ),
    )
    subscription = WebhookSubscription.objects.create(
        owner=owner, event=CLICKED, target_url=url, secret="whsec_" + "A" * 44
    )
    record(owner)
    # The check takes the one good answer; a second lookup of the name would fail.
    assert webhooks_deliver_due().delivered == 1
    (call,) = receiver.received()
    assert call.headers["host"] == f"hooks.rebind.test:{receiver.port}"
    assert verify(subscription.secret, call.headers, call.body)


def test_redirects_are_not_followed(owner, receiver):
    subscribe(owner, CLICKED, receiver.url)
    receiver.location = receiver.url + "/moved"
    receiver.answer(307)
    record(owner)
    assert webhooks_deliver_due().retried == 1
    assert [c.path for c in receiver.received()] == ["/hooks/catch"]
    assert delivery().last_error == "HTTP 307: redirects are not followed"


def test_retries_stop_after_the_retry_window(owner, receiver, settings):
    subscribe(owner, CLICKED, receiver.url)
    receiver.answer(503)
    record(owner)
    WebhookDelivery.objects.update(created_at=timezone.now() - timedelta(hours=27))
    assert webhooks_deliver_due().failed == 1
    row = delivery()
    assert row.status == "failed" and row.last_error.startswith("gave up after 1 attempts")
    assert row.subscription.is_active  # one old event is not a dead subscription


def test_a_subscription_failing_for_days_is_disabled(owner, receiver):
    subscription = subscribe(owner, CLICKED, receiver.url)
    WebhookSubscription.objects.filter(pk=subscription.pk).update(
        failing_since=timezone.now() - timedelta(days=3, minutes=1)
    )
    receiver.answer(500)
    record(owner, 2)
    assert webhooks_deliver_due().failed == 1  # the second is not even tried
    assert len(receiver.received()) == 1
    subscription.refresh_from_db()
    assert subscription.disabled_at is not None and "3 days" in subscription.disabled_reason
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"failed"}
    record(owner)  # a disabled subscription gets nothing new
    assert WebhookDelivery.objects.count() == 2


def test_a_claimed_row_whose_worker_died_is_due_again_after_the_lease(owner, receiver, settings):
    """What the claim leaves behind when a worker is killed during the call: attempts counted
    and ``next_attempt_at`` at the lease's end. Nothing is lost; it goes out once the lease
    has run out."""
    subscribe(owner, CLICKED, receiver.url)
    record(owner)
    lease_end = timezone.now() + timedelta(seconds=settings.WEBHOOK_LEASE_SECONDS)
    WebhookDelivery.objects.update(attempts=1, next_attempt_at=lease_end)
    assert webhooks_deliver_due().delivered == 0
    WebhookDelivery.objects.update(next_attempt_at=timezone.now())
    assert webhooks_deliver_due().delivered == 1
    assert delivery().attempts == 2


def test_a_private_target_is_refused_at_send_time(owner, receiver, settings):
    subscribe(owner, CLICKED, receiver.url)  # allowed while the setting was on
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    record(owner)
    assert webhooks_deliver_due().retried == 1
    assert receiver.received() == []
    assert delivery().last_error == "not sent: target_url must be an https:// URL."


def test_old_events_are_purged_unless_still_being_retried(owner, receiver):
    subscribe(owner, CLICKED, receiver.url)
    done, retrying, recent = record(owner, 3)
    webhooks_deliver_due()
    WebhookDelivery.objects.filter(event=retrying).update(
        status="pending", next_attempt_at=timezone.now() + timedelta(minutes=5)
    )
    old = timezone.now() - timedelta(days=31)
    Event.objects.filter(pk__in=[done.pk, retrying.pk]).update(occurred_at=old)
    assert events_purge() == 1
    assert set(Event.objects.values_list("pk", flat=True)) == {retrying.pk, recent.pk}
    assert WebhookDelivery.objects.count() == 2


def test_delivery_outcomes_are_counted_for_metrics(owner, receiver, client, settings):
    settings.METRICS_TOKEN = "scrape-secret"

    def scraped(outcome: str) -> float:
        text = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-secret").content.decode()
        return sample(text, "rr_webhook_deliveries_total", outcome=outcome)

    before = {outcome: scraped(outcome) for outcome in ("retried", "delivered")}
    subscribe(owner, CLICKED, receiver.url)
    receiver.answer(500)
    record(owner)
    webhooks_deliver_due()
    make_due()
    webhooks_deliver_due()
    assert scraped("retried") == before["retried"] + 1
    assert scraped("delivered") == before["delivered"] + 1


@pytest.fixture
def tls_receiver(tmp_path, monkeypatch):
    """An https receiver on loopback with a certificate for ``localhost``, trusted by the sender
    (the one fake here: the CA store, which would be a public CA's for a real receiver)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=1))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    monkeypatch.setattr(sender, "ca_bundle", lambda: str(cert_path))
    server = WebhookReceiver(tls=(str(cert_path), str(key_path))).start()
    yield server
    server.stop()


def test_https_names_the_host_in_tls_and_checks_its_certificate(owner, tls_receiver):
    """Connected to the checked address, the call still verifies the certificate for the host
    name (SNI) and sends it as ``Host``; a certificate for another name is refused."""
    good = subscribe(owner, CLICKED, f"https://localhost:{tls_receiver.port}/hooks/catch")
    record(owner)
    assert webhooks_deliver_due().delivered == 1
    (call,) = tls_receiver.received()
    assert call.headers["host"] == f"localhost:{tls_receiver.port}"
    assert verify(good.secret, call.headers, call.body)
    good.delete()
    subscribe(owner, CLICKED, f"https://127.0.0.1:{tls_receiver.port}/hooks/catch")
    record(owner)
    assert webhooks_deliver_due().retried == 1
    assert len(tls_receiver.received()) == 1
    assert "TLS certificate not valid for this host" in delivery().last_error


@pytest.mark.django_db(transaction=True)
def test_an_event_outside_a_transaction_is_refused(owner):
    """The outbox rule: an event is written with its change, or not at all."""
    with pytest.raises(RuntimeError, match="in the transaction of the change"):
        event_record(owner_id=owner.pk, type=EventType.FEEDBACK_RECEIVED, data={})
