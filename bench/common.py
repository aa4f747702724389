"""What every part of the bench shares: the trees it measures, their databases and processes.

A *tree* is one checkout of the project: the working tree ``make bench`` runs from ("new"),
and with ``--against REF`` a temporary ``git worktree`` of REF ("old"). Each tree gets its own
PostgreSQL database, temporary directory and port, and its processes (gunicorn, celery) start
from its own directory with the same Python. The harness itself runs the new tree's code: it
reaches a tree only through that tree's HTTP API, its management commands and, for seeding
and reading results, the ORM on the tree's database (an alias of the harness's settings).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
OWNER_EMAIL = "owner@bench.example"


@dataclass
class Tree:
    """One checkout under measurement."""

    name: str  # "new" or "old"
    root: Path  # processes start here, so they import this tree's code
    alias: str  # the harness's DATABASES alias for this tree's database
    env: dict[str, str]  # its processes' environment (settings module, database, port)
    owner_id: str = ""
    token: str = ""

    @property
    def base(self) -> str:
        return self.env["SITE_URL"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def add_service_options(parser: argparse.ArgumentParser) -> None:
    """The options every bench command shares: where it creates its databases and its Redis."""
    parser.add_argument(
        "--admin-database-url",
        default=os.environ.get(
            "BENCH_ADMIN_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres"
        ),
    )
    parser.add_argument(
        "--redis-url", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
    )


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


@contextlib.contextmanager
def fresh_database(admin_url: str, tag: str = ""):
    """A new PostgreSQL database, dropped at the end."""
    name = f"bench_{datetime.now(UTC):%Y%m%d%H%M%S}_{os.getpid()}{tag}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield with_database(admin_url, name)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def service_env(
    *,
    settings_module: str,
    database_url: str,
    redis_url: str,
    secret_key: str,
    var_dir: Path,
    port: int,
    web_workers: int,
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "BENCH_"))}
    env.update(
        DJANGO_SETTINGS_MODULE=settings_module,
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        # One key for both trees: the harness signs and hashes with it when it seeds either.
        SECRET_KEY=secret_key,
        DEBUG="False",
        VAR_DIR=str(var_dir),
        OUTBOX_DIR=str(var_dir / "outbox"),
        STATICFILES_STORAGE="django.contrib.staticfiles.storage.StaticFilesStorage",
        HOST="127.0.0.1",
        PORT=str(port),
        SITE_URL=f"http://127.0.0.1:{port}",
        WEB_CONCURRENCY=str(web_workers),
        # Worker recycling (a leak guard: a fork plus Django's start, about a second) would land
        # inside measured windows as p99 spikes; every other gunicorn setting is the Procfile's.
        WEB_MAX_REQUESTS="0",
        # The limiter runs on every request, but a single bench user must not hit 429.
        RATE_LIMIT_PER_HOUR=str(10**9),
        LOG_LEVEL="WARNING",
        PYTHONUNBUFFERED="1",
    )
    return env


def run_manage(tree: Tree, *args: str) -> str:
    """``manage.py`` of ``tree``, from its directory; its standard output."""
    result = subprocess.run(
        [PYTHON, "manage.py", *args], cwd=tree.root, env=tree.env, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise SystemExit(
            f"{tree.name} tree: manage.py {' '.join(args)} failed:\n{result.stderr[-3000:]}"
        )
    return result.stdout


@contextlib.contextmanager
def process(cmd: list[str], env: dict, log_path: Path, cwd: Path = ROOT):
    """A child in its own process group, stopped (SIGTERM, then SIGKILL) on exit."""
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            yield proc
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)


def web(tree: Tree, var_dir: Path):
    """``tree``'s gunicorn with the Procfile's configuration (a context manager)."""
    cmd = [PYTHON, "-m", "gunicorn", "config.wsgi", "--config", "config/gunicorn.py"]
    return process(cmd, tree.env, var_dir / f"web-{tree.name}.log", cwd=tree.root)


def wait_http(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"{url} did not answer within {timeout}s")


def children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    out.append(int(entry.name))
    return out


def peak_rss_mb(pid: int) -> float:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0
