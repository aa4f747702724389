"""A webhook receiver on loopback: the network boundary of the events tests, and nothing else.

Records every POST (path, headers, raw body) and answers from a script (``answer(500, 410)``:
the next calls' statuses; then 200). ``stop()`` closes the port (a receiver that is down:
connections are refused) and ``start()`` listens on the same port again; ``tls`` (certificate
and key files) makes it an https receiver. ``hang_seconds``:
answer that late (a receiver slower than the sender's timeout). ``drip_seconds`` with ``drip``
(``"head"`` or ``"body"``): answer 200 one byte every that many seconds, from the status line
on or only the body (a receiver that never stops talking). Standard library only.

The fixtures ``receiver`` (one started for the test) and ``allow_loopback`` (loopback targets
over http, as WEBHOOK_ALLOW_PRIVATE_TARGETS allows in development) are loaded by
tests/conftest.py; ``subscribe`` is a business's subscription to a target.
"""

from __future__ import annotations

import contextlib
import json
import ssl
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from events.models import WebhookSubscription
from events.services import webhook_subscription_create
from tests.support.fake_providers import POLL_INTERVAL


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> dict:
        return json.loads(self.body)


class WebhookReceiver:
    def __init__(self, *, tls: tuple[str, str] | None = None) -> None:
        self.port = 0  # the OS picks one at the first start(); later starts reuse it
        self.tls = tls  # (certificate, key) PEM files: https
        self.calls: list[Received] = []  # answered calls
        self.arrivals = 0  # calls read, answered or not yet (a hanging answer)
        self.statuses: deque[int] = deque()
        self.location = ""  # the Location of a scripted 3xx
        self.hang_seconds = 0.0
        self.drip_seconds = 0.0
        self.drip = "head"
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.port, "start() the receiver first: its port is the OS's choice"
        return f"http://127.0.0.1:{self.port}/hooks/catch"

    def answer(self, *statuses: int) -> None:
        with self._lock:
            self.statuses.extend(statuses)

    def received(self) -> list[Received]:
        with self._lock:
            return list(self.calls)

    def start(self) -> WebhookReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with receiver._lock:
                    receiver.arrivals += 1
                if receiver.hang_seconds:
                    time.sleep(receiver.hang_seconds)
                with receiver._lock:
                    receiver.calls.append(
                        Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    status = receiver.statuses.popleft() if receiver.statuses else 200
                if receiver.drip_seconds:
                    self._drip()
                    return
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", receiver.location or "/elsewhere")
                payload = b"x" * 100_000 if status == 500 else b"ok"  # a long error page
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                # The sender may stop reading: it reads a bounded head only.
                with contextlib.suppress(OSError):
                    self.wfile.write(payload)

            def _drip(self) -> None:
                body = b"ok" * 20
                head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                if receiver.drip == "body":
                    self.wfile.write(head)
                    head = b""
                for byte in head + body:
                    time.sleep(receiver.drip_seconds)
                    try:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                    except OSError:
                        return  # the sender hung up

            def log_message(self, *args) -> None:
                pass

        # Port 0 the first time: the OS's free port, bound at once (a port picked, closed and
        # bound later could be taken in between by a parallel test run's server).
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self._server.server_port
        if self.tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*self.tls)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, args=(POLL_INTERVAL,), daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


@pytest.fixture
def receiver():
    server = WebhookReceiver().start()
    yield server
    server.stop()


@pytest.fixture
def allow_loopback(settings):
    """Loopback targets over http: what WEBHOOK_ALLOW_PRIVATE_TARGETS is for (tests, dev)."""
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    settings.WEBHOOK_TIMEOUT_SECONDS = 1.0


def subscribe(owner, event: str, url: str) -> WebhookSubscription:
    return webhook_subscription_create(owner=owner, event=event, target_url=url)
