"""Start the service's real processes (from the Procfile) against the test database.

Tests that need web, worker or beat as separate OS processes use ``ServiceProcesses``: it runs
``honcho start <types>`` with an environment pointing at this test session's database, an
isolated ``VAR_DIR`` (embedded broker, file cache, outbox) and, when the suite runs with Redis,
the same Redis. Every wait is bounded; every process group is stopped on exit.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_database_url() -> str:
    """A DATABASE_URL for the database this test session is using right now."""
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{Path(s['NAME']).resolve()}"
    if connection.vendor == "postgresql":
        auth = quote(s["USER"] or "postgres")
        if s.get("PASSWORD"):
            auth += ":" + quote(s["PASSWORD"])
        return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    raise NotImplementedError(connection.vendor)


def service_env(var_dir: Path, *, embedded_broker: bool = False, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DJANGO_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="tests.support.process_settings",
        DATABASE_URL=test_database_url(),
        SECRET_KEY=settings.SECRET_KEY,
        VAR_DIR=str(var_dir),
        OUTBOX_DIR=str(var_dir / "outbox"),
        STATICFILES_STORAGE="django.contrib.staticfiles.storage.StaticFilesStorage",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        PYTHONUNBUFFERED="1",
        # One gunicorn worker and one Celery pool child, enough for every test but those that
        # set their own (the fault tests' pool of two): gunicorn does not preload, so each more
        # web worker imports Django again (~1.4 s of CPU a launch).
        WEB_CONCURRENCY="1",
        WORKER_CONCURRENCY="1",
        # Celery's worker runs Django's system checks as it starts (~0.25 s of CPU a launch);
        # make check runs them once for the whole suite.
        CELERY_SKIP_CHECKS="1",
        TEST_RATE_LIMIT_KEY_PREFIX=f"rr:rl:test:{uuid.uuid4().hex[:12]}",
    )
    if embedded_broker:
        env.pop("REDIS_URL", None)
    elif settings.REDIS_URL:
        env["REDIS_URL"] = settings.REDIS_URL
    env.update(extra)
    return env


class ServiceProcesses:
    """``with ServiceProcesses(tmp_path, ["worker", "beat"]) as svc: ...``"""

    def __init__(
        self,
        var_dir: Path,
        process_types: list[str],
        *,
        embedded_broker: bool = False,
        env: dict[str, str] | None = None,
    ):
        self.var_dir = Path(var_dir)
        self.var_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.types = process_types
        self.env = service_env(
            self.var_dir,
            embedded_broker=embedded_broker,
            **{
                "PORT": str(self.port),
                # honcho gives each process type its own PORT (worker: PORT+100): fix the
                # links. A caller's env wins (the fault tests pin one public URL).
                "SITE_URL": self.base_url,
                **(env or {}),
            },
        )
        self.log_path = self.var_dir / "processes.log"
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> ServiceProcesses:
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "honcho", "-f", str(ROOT / "Procfile"), "start", *self.types],
            cwd=ROOT,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so stop() reaches every child
        )
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
        self._log.close()

    def stop(self, sig: int = signal.SIGINT, timeout: float = 20) -> int | None:
        """Ctrl-C to the whole group, as a terminal would; SIGKILL if it does not stop in time."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        os.killpg(self.proc.pid, sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)
        return self.proc.returncode

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(
        self, predicate: Callable[[], object], timeout: float = 60, what: str = ""
    ) -> object:
        """Poll ``predicate`` until it returns something truthy; fail with the process log."""
        deadline = time.monotonic() + timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"service processes exited early:\n{self.log()[-4000:]}")
            try:
                result = predicate()
            except Exception as exc:  # not up yet: keep polling until the deadline
                last_error = exc
                result = None
            if result:
                return result
            time.sleep(0.2)
        raise AssertionError(
            f"timed out after {timeout}s waiting for {what or predicate!r}"
            f" (last error: {last_error!r})\n{self.log()[-4000:]}"
        )


def worker_processes(honcho: ServiceProcesses) -> tuple[int, list[int]]:
    """(Celery main pid, its pool children) under a ServiceProcesses running ``worker``."""

    def children(pid: int) -> list[int]:
        path = Path(f"/proc/{pid}/task/{pid}/children")
        return [int(p) for p in path.read_text().split()] if path.exists() else []

    def argv(pid: int) -> list[str]:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        except FileNotFoundError:
            return []

    assert honcho.proc is not None, "the processes are not started"
    stack = [honcho.proc.pid]
    while stack:
        pid = stack.pop()
        args = argv(pid)
        is_shell = bool(args) and Path(args[0]).name in {"sh", "bash", "dash"}
        if not is_shell and "celery" in " ".join(args) and "worker" in args:
            return pid, children(pid)  # the main process; its children are the pool
        stack.extend(children(pid))
    raise AssertionError("no celery worker process found")
