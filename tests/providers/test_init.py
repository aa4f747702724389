"""How provider answers map to the two exceptions (no SDK exception reaches the service)."""

from __future__ import annotations

import socket
import threading

import pytest
import requests

from providers import (
    DeliveryOutcomeUnknown,
    DeliveryRejected,
    classify_http_status,
    request_never_left,
)
from tests.support.http_errors import connection_error
from tests.support.processes import free_port


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (429, "transient"),
        (500, "transient"),
        (503, "transient"),
        (401, "transient"),
        (400, "permanent"),
        (422, "permanent"),
        (502, "unknown"),
        (504, "unknown"),
    ],
)
def test_http_statuses_have_one_classification_for_every_provider(status, kind):
    error = classify_http_status(status, "x")
    if kind == "unknown":
        assert isinstance(error, DeliveryOutcomeUnknown)
    else:
        assert isinstance(error, DeliveryRejected) and error.permanent is (kind == "permanent")


def test_a_refused_connection_never_left_but_a_read_timeout_may_have():
    refused = connection_error(f"http://127.0.0.1:{free_port()}/")
    assert request_never_left(refused)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    accepted = []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()
    timed_out = connection_error(f"http://127.0.0.1:{server.getsockname()[1]}/", timeout=0.3)
    assert isinstance(timed_out, requests.ReadTimeout)
    assert not request_never_left(timed_out)
    server.close()
