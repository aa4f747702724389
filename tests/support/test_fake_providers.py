"""The fake provider's latency is what the benchmarks' bound assumes: from a request's arrival
to its answer, with the fake's own parsing inside it rather than added to it."""

from __future__ import annotations

import http.client
from urllib.parse import urlsplit

import pytest

from tests.support import fake_providers
from tests.support.fake_providers import FakeProviders


def _create_message(connection: http.client.HTTPConnection) -> http.client.HTTPResponse:
    """One Twilio "create message" call, its body read."""
    connection.request(
        "POST",
        "/2010-04-01/Accounts/ACtest/Messages.json",
        body="To=%2B15005550006&Body=hi",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    response = connection.getresponse()
    response.read()
    return response


def test_the_fakes_latency_counts_from_the_requests_arrival(monkeypatch):
    ticks = iter([100.0, 100.004])  # the request line in; its answer ready 4 ms later
    slept = []
    monkeypatch.setattr(fake_providers, "_clock", lambda: next(ticks))
    monkeypatch.setattr(fake_providers, "_sleep", slept.append)
    with FakeProviders(latency=0.05) as fake:
        address = urlsplit(fake.url)
        connection = http.client.HTTPConnection(address.hostname, address.port, timeout=5)
        response = _create_message(connection)
        connection.close()
    assert response.status == 201
    assert slept == [pytest.approx(0.046)]


def test_the_fake_takes_a_burst_of_new_connections_as_a_provider_would():
    """A drain opens every worker's pooled connections at once (24 and more). With the
    standard library's listen backlog of 5, the kernel reset some of them after the request
    was written, and those sends were recorded ``unknown``, never accepted (a harness
    artifact: 11 of 20,000 in one drain). A provider's backlog is not 5."""
    import threading

    burst, errors, statuses = 64, [], []
    with FakeProviders(latency=0.05) as fake:
        address = urlsplit(fake.url)
        start = threading.Barrier(burst)

        def send() -> None:
            connection = http.client.HTTPConnection(address.hostname, address.port, timeout=10)
            try:
                start.wait()
                statuses.append(_create_message(connection).status)
            except OSError as exc:
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=send) for _ in range(burst)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert errors == []
    assert statuses == [201] * burst
