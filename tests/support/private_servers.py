"""Private Redis and PostgreSQL servers for fault tests that flush, kill or restart them.

The machine's shared servers are never touched: each helper starts its own instance on a free
loopback port in a temporary folder, and stops and deletes it on exit. Every wait is bounded.
PostgreSQL runs as the ``postgres`` user (``initdb`` refuses root), through ``runuser``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.processes import free_port

PG_BIN = Path(os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin"))


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@dataclass
class PrivateRedis:
    """A ``redis-server`` without persistence on a free port; tests may kill and restart it."""

    port: int
    workdir: Path
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def cli(self, *args: str) -> str:
        return subprocess.run(
            ["redis-cli", "-h", "127.0.0.1", "-p", str(self.port), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()

    def flushdb(self) -> None:
        assert self.cli("FLUSHDB") == "OK"

    def start(self) -> None:
        """Start (or start again, empty, on the same port after ``kill``)."""
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait(lambda: _redis_ping(self), 15, "the private redis-server")

    def kill(self) -> None:
        """SIGKILL, as a crash would: connections drop, nothing is saved."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)


@contextlib.contextmanager
def private_redis() -> Iterator[PrivateRedis]:
    """A private Redis on a free port, in a temporary folder; stopped and deleted on exit."""
    if shutil.which("redis-server") is None:
        import pytest

        pytest.skip("redis-server is not installed")
    server = PrivateRedis(free_port(), Path(tempfile.mkdtemp(prefix="private-redis-")))
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.workdir, ignore_errors=True)


def _redis_ping(server: PrivateRedis) -> bool:
    try:
        return server.cli("PING") == "PONG"
    except subprocess.SubprocessError:
        return False


@dataclass
class PrivatePostgres:
    port: int
    root: Path

    @property
    def data(self) -> Path:
        return self.root / "data"

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def pg_ctl(self, *args: str, timeout: float = 60) -> None:
        _as_postgres(
            [str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "log"), *args],
            timeout=timeout,
        )

    def restart_immediately(self) -> None:
        """``pg_ctl restart -m immediate``: every backend killed, crash recovery on start."""
        self.pg_ctl("restart", "-m", "immediate", "-w", "-o", self._options())

    def _options(self) -> str:
        return f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1"

    def log(self) -> str:
        path = self.root / "log"
        return path.read_text(errors="replace") if path.exists() else ""


def postgres_available() -> bool:
    return (
        (PG_BIN / "initdb").exists() and shutil.which("runuser") is not None and os.geteuid() == 0
    )


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A throwaway PostgreSQL cluster (trust auth, loopback only) on a free port."""
    root = Path(tempfile.mkdtemp(prefix="issue-5-delivery-pg-"))
    root.chmod(0o755)
    shutil.chown(root, "postgres", "postgres")
    server = PrivatePostgres(free_port(), root)
    _as_postgres(
        [
            str(PG_BIN / "initdb"),
            "-D",
            str(server.data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
            "-E",
            "UTF8",
        ],
        timeout=120,
    )
    try:
        server.pg_ctl("start", "-w", "-o", server._options())
        yield server
    finally:
        with contextlib.suppress(Exception):
            server.pg_ctl("stop", "-m", "immediate", "-w", timeout=30)
        shutil.rmtree(root, ignore_errors=True)


def _as_postgres(command: list[str], *, timeout: float) -> None:
    subprocess.run(
        ["runuser", "-u", "postgres", "--", *command],
        check=True,
        capture_output=True,
        timeout=timeout,
    )
