"""A webhook receiver on loopback: the network boundary of the events tests, and nothing else.

Records every POST (path, headers, raw body) and answers from a script (``answer(500, 410)``:
the next calls' statuses; then 200). ``stop()`` closes the port (a receiver that is down:
connections are refused) and ``start()`` listens on the same port again. ``hang_seconds``:
answer that late (a receiver slower than the sender's timeout). Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.support.processes import free_port


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> dict:
        return json.loads(self.body)


class WebhookReceiver:
    def __init__(self) -> None:
        self.port = free_port()
        self.calls: list[Received] = []  # answered calls
        self.arrivals = 0  # calls read, answered or not yet (a hanging answer)
        self.statuses: deque[int] = deque()
        self.location = ""  # the Location of a scripted 3xx
        self.hang_seconds = 0.0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
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
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", receiver.location or "/elsewhere")
                payload = b"x" * 100_000 if status == 500 else b"ok"  # a long error page
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                # The sender may stop reading: it reads a bounded head only.
                with contextlib.suppress(OSError):
                    self.wfile.write(payload)

            def log_message(self, *args) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
