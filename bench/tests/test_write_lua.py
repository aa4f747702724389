"""bench/wrk/write.lua, run by the real wrk against a small recording server: every request of
a run has its own Idempotency-Key and e-mail across all of wrk's threads, and the replays the
server marks are counted in what the harness reads."""

from __future__ import annotations

import json
import shutil
import threading
from argparse import Namespace
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bench import load

pytestmark = pytest.mark.skipif(shutil.which("wrk") is None, reason="needs wrk on PATH")


class Recorder(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64  # wrk connects all its connections at once

    def __init__(self, replay_every: int = 0):
        super().__init__(("127.0.0.1", 0), Handler)
        self.replay_every = replay_every
        self.lock = threading.Lock()
        self.keys: Counter[str] = Counter()
        self.emails: Counter[str] = Counter()
        self.answered = 0

    def handle_error(self, request, client_address):
        pass  # wrk closes its connections with requests in flight at the end of a run

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as wrk expects
    disable_nagle_algorithm = True  # the body's segment is not held for the headers' ACK

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        server: Recorder = self.server
        with server.lock:
            server.keys[self.headers["Idempotency-Key"]] += 1
            server.emails[body["email"]] += 1
            server.answered += 1
            replay = server.replay_every and server.answered % server.replay_every == 0
        self.send_response(200 if replay else 201)
        if replay:
            self.send_header("Idempotent-Replayed", "true")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


@pytest.fixture
def recorder(request):
    server = Recorder(**getattr(request, "param", {}))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def run_wrk(url: str, **env: str) -> load.LoadResult:
    args = Namespace(wrk_threads=4, connections=8)
    return load.wrk(url, "write.lua", 1, args, "write.lua", BENCH_DELAY_MS="2", **env)


def test_every_thread_sends_its_own_keys_and_e_mails(recorder):
    result = run_wrk(recorder.url)

    assert sum(recorder.keys.values()) >= 100  # all four threads sent for a second
    assert max(recorder.keys.values()) == 1
    assert max(recorder.emails.values()) == 1
    # The key and the e-mail carry the thread's number: four threads, four numbers.
    assert len({key.rsplit("-", 2)[1] for key in recorder.keys}) == 4
    assert result.replayed == 0


def test_duplicates_reuse_e_mails_but_never_keys(recorder):
    run_wrk(recorder.url, BENCH_DUP_RATIO="0.5", BENCH_DUP_POOL="5")

    assert max(recorder.keys.values()) == 1
    assert {e for e, n in recorder.emails.items() if n > 1} <= {
        f"dup-{n}@bench.example" for n in range(5)
    }


@pytest.mark.parametrize("recorder", [{"replay_every": 10}], indirect=True)
def test_replayed_answers_of_all_threads_are_counted(recorder):
    result = run_wrk(recorder.url)

    # wrk may close with requests in flight that the server answered but wrk did not read.
    assert recorder.answered // 10 - 8 <= result.replayed <= recorder.answered // 10
    assert result.replayed > 0
