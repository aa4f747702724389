"""bench/wrk/flood.lua, run by the real wrk through ``bench.flood.flood`` against a small
recording server: the login flood sends a new address in every request, with its headers, and
the token flood's fixed body stays fixed."""

from __future__ import annotations

import shutil
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import pytest

from bench import flood

pytestmark = pytest.mark.skipif(shutil.which("wrk") is None, reason="needs wrk on PATH")


class Recorder(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64  # wrk connects all its connections at once

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.lock = threading.Lock()
        self.usernames: Counter[str] = Counter()
        self.headers_seen: Counter[tuple[str, str]] = Counter()

    def handle_error(self, request, client_address):
        pass  # wrk closes its connections with requests in flight at the end of a run

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/accounts/login/"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as wrk expects
    disable_nagle_algorithm = True

    def do_POST(self):
        body = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
        server: Recorder = self.server
        with server.lock:
            server.usernames[body["username"][0]] += 1
            server.headers_seen[(self.headers["Cookie"], self.headers["X-Forwarded-For"])] += 1
        self.send_response(429)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def recorder():
    server = Recorder()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_the_login_flood_sends_a_new_address_every_time_with_its_headers(recorder):
    result = flood.flood(
        recorder.url,
        1,
        body="username=flood-__N__%40bench.example&password=x",
        headers="Cookie: csrftoken=abc|X-Forwarded-For: 10.9.8.7",
    )

    assert sum(recorder.usernames.values()) >= 100
    assert max(recorder.usernames.values()) == 1
    assert all(name.startswith("flood-") for name in recorder.usernames)
    assert set(recorder.headers_seen) == {("csrftoken=abc", "10.9.8.7")}
    assert result["statuses"][429] > 0


def test_a_fixed_body_stays_fixed(recorder):
    flood.flood(recorder.url, 1, body="username=same%40bench.example&password=x")

    assert list(recorder.usernames) == ["same@bench.example"]
