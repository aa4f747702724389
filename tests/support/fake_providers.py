"""Fake Twilio and Postmark APIs on loopback: the network boundary, and nothing else, faked.

The real Twilio client (``TWILIO_API_BASE_URL``) and anymail's real Postmark backend
(``ANYMAIL["POSTMARK_API_URL"]``) talk HTTP to this server, so the code under test runs its
actual SDK calls, timeouts and error mapping. Standard library only; thread-safe.

* ``POST /2010-04-01/Accounts/<sid>/Messages.json``: create an SMS; 201 with a new ``SM…`` SID.
* ``GET  /2010-04-01/Accounts/<sid>/Messages.json?To=…``: list accepted messages (newest first).
* ``GET  /2010-04-01/Accounts/<sid>/Messages/<SID>.json``: fetch one.
* ``POST /email`` (Postmark): send an e-mail; 200 with a ``MessageID``.
* ``GET  /_fake/calls``: the record as JSON, for a benchmark running in another process.

Every call is recorded with *our* message id (parsed from the Twilio status-callback URL, or
from the Postmark metadata), whether the provider accepted it, and when. ``count(id)`` is how
many times the provider accepted a message: the fault tests assert it is never above one.

Behaviour knobs: ``latency`` (seconds from a request's arrival to its answer: the fake's own
parsing is inside it, not added to it), ``error_rate`` (share of sends answered
503), ``timeout_rate`` (share of sends accepted, then answered only after ``hang_seconds``, past
the client's read timeout: the "unknown outcome" case), and scripted responses for the next
calls (``script("twilio", "500")``...). Run it alone for a benchmark:
``python -m tests.support.fake_providers --latency 0.05``.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import threading
import time
import uuid
from collections import Counter, deque
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

_OUR_ID = re.compile(r"/webhooks/twilio/status/([0-9a-f-]{36})/")
_TWILIO_CREATE = re.compile(r"^/2010-04-01/Accounts/([^/]+)/Messages\.json$")
_TWILIO_FETCH = re.compile(r"^/2010-04-01/Accounts/([^/]+)/Messages/([^/]+)\.json$")

# What a scripted Twilio call answers: (HTTP status, Twilio error code or None, message).
TWILIO_SCRIPTS = {
    "500": (500, 20500, "Internal Server Error"),
    "503": (503, 20503, "Service Unavailable"),
    "429": (429, 20429, "Too Many Requests"),
    "504": (504, None, "Gateway Timeout"),
    "21211": (400, 21211, "The 'To' number is not a valid phone number."),
    "21610": (400, 21610, "Attempt to send to unsubscribed recipient"),
    "21614": (400, 21614, "'To' number is not a valid mobile number"),
    "401": (401, 20003, "Authenticate"),
}


_clock, _sleep = time.monotonic, time.sleep  # the handler's (a test replaces them)


@dataclass
class Call:
    provider: str  # "twilio" or "postmark"
    our_message_id: str
    to: str
    body: str
    accepted: bool
    response_status: int
    provider_message_id: str = ""
    status_callback: str = ""
    at: float = field(default_factory=time.time)


_HOST = "127.0.0.1"  # loopback only
# How often serve_forever looks for shutdown(): stop() waits up to this long. The standard
# library's 0.5 s was half a second of teardown for every test with a fake provider.
POLL_INTERVAL = 0.02


class FakeProviders:
    """``with FakeProviders(latency=0.05) as fake: ...`` then point the settings at
    ``fake.twilio_base_url`` / ``fake.postmark_url``."""

    def __init__(
        self,
        *,
        latency: float = 0.0,
        error_rate: float = 0.0,
        timeout_rate: float = 0.0,
        hang_seconds: float = 3.0,
        seed: int | None = None,
        port: int = 0,
    ):
        self.latency = latency
        self.error_rate = error_rate
        self.timeout_rate = timeout_rate
        self.hang_seconds = hang_seconds
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._calls: list[Call] = []
        self._messages: dict[str, dict] = {}  # Twilio SID -> message resource
        self._scripts: dict[str, deque[str]] = {"twilio": deque(), "postmark": deque()}
        self._server = _Server((_HOST, port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(POLL_INTERVAL,), daemon=True
        )

    # --- lifecycle --------------------------------------------------------------------------

    def __enter__(self) -> FakeProviders:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        return f"http://{_HOST}:{self._server.server_port}"

    twilio_base_url = url

    @property
    def postmark_url(self) -> str:
        return f"{self.url}/"

    # --- control ----------------------------------------------------------------------------

    def script(self, provider: str, *outcomes: str) -> None:
        """Answer the next calls to ``provider`` with these outcomes, in order: a key of
        ``TWILIO_SCRIPTS`` (Twilio), ``"500"``/``"503"``/``"422"``/``"406"`` (Postmark),
        ``"hang"`` (accept, then answer after ``hang_seconds``), ``"drop"`` (read the request,
        close the connection without answering), ``"ok"``."""
        with self._lock:
            self._scripts[provider].extend(outcomes)

    def _next_outcome(self, provider: str) -> str:
        with self._lock:
            if self._scripts[provider]:
                return self._scripts[provider].popleft()
            roll = self._random.random()
        if roll < self.error_rate:
            return "503"
        if roll < self.error_rate + self.timeout_rate:
            return "hang"
        return "ok"

    # --- record -----------------------------------------------------------------------------

    def _record(self, call: Call) -> None:
        with self._lock:
            self._calls.append(call)

    @property
    def calls(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    def count(self, our_message_id: str) -> int:
        """How many times a provider accepted this message of ours."""
        return sum(1 for c in self.calls if c.our_message_id == our_message_id and c.accepted)

    def counts(self) -> Counter:
        return Counter(c.our_message_id for c in self.calls if c.accepted)

    def attempts(self, our_message_id: str) -> int:
        """Every request for this message, accepted or not."""
        return sum(1 for c in self.calls if c.our_message_id == our_message_id)

    def twilio_messages(self) -> list[dict]:
        with self._lock:
            return list(self._messages.values())

    # --- Twilio -----------------------------------------------------------------------------

    def _twilio_create(self, account_sid: str, form: dict[str, str]) -> tuple[int, dict, str]:
        callback = form.get("StatusCallback", "")
        match = _OUR_ID.search(callback)
        our_id = match.group(1) if match else ""
        outcome = self._next_outcome("twilio")
        if outcome in TWILIO_SCRIPTS:
            status, code, text = TWILIO_SCRIPTS[outcome]
            self._record(
                Call(
                    "twilio",
                    our_id,
                    form.get("To", ""),
                    form.get("Body", ""),
                    False,
                    status,
                    status_callback=callback,
                )
            )
            body = {"status": status, "message": text, "more_info": ""}
            if code is not None:
                body["code"] = code
            return status, body, outcome
        sid = "SM" + uuid.uuid4().hex
        now = datetime.now(UTC).strftime("%a, %d %b %Y %H:%M:%S +0000")
        to, body_text = form.get("To", ""), form.get("Body", "")
        resource = {
            "sid": sid,
            "account_sid": account_sid,
            "to": to,
            "from": form.get("From") or None,
            "messaging_service_sid": form.get("MessagingServiceSid") or None,
            "body": body_text,
            "status": "queued",
            "num_segments": "1",
            "direction": "outbound-api",
            "api_version": "2010-04-01",
            "date_created": now,
            "date_updated": now,
            "date_sent": now,
            "error_code": None,
            "error_message": None,
            "uri": f"/2010-04-01/Accounts/{account_sid}/Messages/{sid}.json",
        }
        with self._lock:
            self._messages[sid] = resource
        self._record(Call("twilio", our_id, to, body_text, True, 201, sid, callback))
        return 201, resource, outcome

    def _twilio_list(self, query: dict[str, list[str]]) -> dict:
        to = (query.get("To") or [""])[0]
        with self._lock:
            items = [m for m in self._messages.values() if not to or m["to"] == to]
        items.reverse()
        return {
            "messages": items,
            "end": max(len(items) - 1, 0),
            "first_page_uri": "",
            "next_page_uri": None,
            "page": 0,
            "page_size": 50,
            "previous_page_uri": None,
            "start": 0,
            "uri": "",
        }

    # --- Postmark ---------------------------------------------------------------------------

    def _postmark_send(self, payload: dict) -> tuple[int, dict, str]:
        our_id = str((payload.get("Metadata") or {}).get("message_id", ""))
        to = str(payload.get("To", ""))
        body = str(payload.get("TextBody", ""))
        outcome = self._next_outcome("postmark")
        if outcome in ("500", "503"):
            self._record(Call("postmark", our_id, to, body, False, int(outcome)))
            return int(outcome), {"ErrorCode": 100, "Message": "Maintenance"}, outcome
        if outcome == "406":
            self._record(Call("postmark", our_id, to, body, False, 422))
            message = (
                "You tried to send to a recipient that has been marked as inactive.\n"
                f"Found inactive addresses: {to.lower()}.\n"
                "Inactive recipients are ones that have generated a hard bounce or a spam "
                "complaint."
            )
            return 422, {"ErrorCode": 406, "Message": message}, outcome
        if outcome == "422":
            self._record(Call("postmark", our_id, to, body, False, 422))
            return 422, {"ErrorCode": 300, "Message": f"Invalid 'To' address: '{to}'."}, outcome
        esp_id = str(uuid.uuid4())
        self._record(Call("postmark", our_id, to, body, True, 200, esp_id))
        answer = {
            "To": to,
            "SubmittedAt": datetime.now(UTC).isoformat(),
            "MessageID": esp_id,
            "ErrorCode": 0,
            "Message": "OK",
        }
        return 200, answer, outcome

    def snapshot(self) -> dict:
        return {"calls": [asdict(c) for c in self.calls], "counts": dict(self.counts())}


class _Server(ThreadingHTTPServer):
    # The standard library listens with a backlog of 5: a burst of new connections (a drain
    # opening every worker's pool at once) overflowed it, and the kernel reset connections
    # whose request was already written, which the client must record as an unknown outcome.
    # A provider's backlog is not 5; the kernel caps this at net.core.somaxconn.
    request_queue_size = 1024


def _handler_for(fake: FakeProviders) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body leave in separate writes; with Nagle on, the body waits for the
        # client's delayed ACK (40 ms on Linux) and every call took latency + 40 ms.
        disable_nagle_algorithm = True

        def log_message(self, format, *args) -> None:  # quiet
            pass

        def parse_request(self) -> bool:
            self.received = _clock()  # the request line is in: the latency starts here
            return super().parse_request()

        def _read(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _answer(self, status: int, payload: dict, outcome: str = "ok") -> None:
            if outcome == "drop":
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if fake.latency:
                _sleep(max(0.0, fake.latency - (_clock() - self.received)))
            if outcome == "hang":
                time.sleep(fake.hang_seconds)
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (a timeout test)

        def do_POST(self) -> None:
            path = urlsplit(self.path).path
            raw = self._read()
            if match := _TWILIO_CREATE.match(path):
                form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
                status, payload, outcome = fake._twilio_create(match.group(1), form)
                self._answer(status, payload, outcome)
            elif path == "/email":
                status, payload, outcome = fake._postmark_send(json.loads(raw or b"{}"))
                self._answer(status, payload, outcome)
            else:
                self._answer(404, {"message": "not found", "status": 404})

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path == "/_fake/calls":
                self._answer(200, fake.snapshot())
            elif _TWILIO_CREATE.match(parts.path):
                self._answer(200, fake._twilio_list(parse_qs(parts.query)))
            elif match := _TWILIO_FETCH.match(parts.path):
                with fake._lock:
                    found = fake._messages.get(match.group(2))
                if found is None:
                    self._answer(404, {"code": 20404, "message": "not found", "status": 404})
                else:
                    self._answer(200, found)
            else:
                self._answer(404, {"message": "not found", "status": 404})

    return Handler


def main() -> None:  # pragma: no cover - a helper for benchmarks run by hand
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--error-rate", type=float, default=0.0)
    parser.add_argument("--timeout-rate", type=float, default=0.0)
    args = parser.parse_args()
    fake = FakeProviders(
        latency=args.latency,
        error_rate=args.error_rate,
        timeout_rate=args.timeout_rate,
        port=args.port,
    )
    fake.start()
    print(fake.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        fake.stop()


if __name__ == "__main__":  # pragma: no cover
    main()
