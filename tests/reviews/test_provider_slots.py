"""DELIVERY_PROVIDER_CONCURRENCY: at most that many provider calls at once per process."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection
from django.test import override_settings

from reviews.models import Message
from reviews.services import message_send, messages_dispatch_due, sending
from tests.support.delivery import sms_request, step


class CountingChannel:
    """The real Twilio channel, watched: how many of its calls overlap."""

    def __init__(self, real):
        self.real = real
        self.lock = threading.Lock()
        self.now = self.peak = 0

    def send(self, sms):
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        try:
            return self.real.send(sms)
        finally:
            with self.lock:
                self.now -= 1


@pytest.mark.django_db(transaction=True)
def test_no_more_provider_calls_at_once_than_the_slots(business, twilio, monkeypatch):
    twilio.latency = 0.15
    real = sending.sms_channel()
    watched = CountingChannel(real)
    monkeypatch.setattr(sending, "sms_channel", lambda: watched)
    requests = [sms_request(business) for _ in range(6)]
    claimed = messages_dispatch_due().claimed
    results: list[str] = []

    def run(message_id):
        try:
            results.append(message_send(message_id=message_id))
        finally:
            connection.close()

    with override_settings(DELIVERY_PROVIDER_CONCURRENCY=2, DELIVERY_PROVIDER_WAIT_SECONDS=5):
        threads = [threading.Thread(target=run, args=(m,)) for m in claimed]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        elapsed = time.monotonic() - started

    assert sorted(results) == ["sent"] * 6
    assert watched.peak == 2
    assert elapsed >= 3 * 0.15  # six calls through two slots: three rounds at least
    assert all(step(r, 0).status == Message.Status.SENT for r in requests)
    assert all(twilio.count(m) == 1 for m in claimed)


@pytest.mark.django_db
def test_a_send_that_gets_no_slot_in_time_goes_back_to_pending_unclaimed(business, twilio):
    request = sms_request(business)
    (message_id,) = messages_dispatch_due().claimed
    with override_settings(DELIVERY_PROVIDER_CONCURRENCY=1, DELIVERY_PROVIDER_WAIT_SECONDS=0.05):
        busy = sending.ProviderSlot()
        assert busy.acquire()  # another send holds the only slot
        try:
            assert message_send(message_id=message_id) == "retry"
        finally:
            busy.release()
        message = step(request, 0)
        assert (message.status, message.attempts) == (Message.Status.PENDING, 0)
        assert twilio.count(message_id) == 0
        # The next sweep dispatches it again and, with the slot free, it goes out.
        assert messages_dispatch_due().claimed == [message_id]
        assert message_send(message_id=message_id) == "sent"


@pytest.mark.django_db
def test_a_slot_comes_back_whatever_the_provider_answered(business, twilio):
    with override_settings(DELIVERY_PROVIDER_CONCURRENCY=1, DELIVERY_PROVIDER_WAIT_SECONDS=0.05):
        twilio.script("twilio", "503", "21211")
        outcomes = []
        for _ in range(3):
            sms_request(business)
            (message_id,) = messages_dispatch_due().claimed
            outcomes.append(message_send(message_id=message_id))
        assert outcomes == ["retry", "failed", "sent"]  # none of them found the slot taken
        slot = sending.ProviderSlot()
        assert slot.acquire()
        slot.release()
        slot.release()  # a second release does nothing (a BoundedSemaphore would raise)


def test_without_a_cap_a_slot_is_always_there(settings):
    settings.DELIVERY_PROVIDER_CONCURRENCY = 0
    slots = [sending.ProviderSlot() for _ in range(100)]
    assert all(slot.acquire() for slot in slots)
