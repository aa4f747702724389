"""A parallel run migrates one template database, and each worker's test database is a copy of it
(PostgreSQL).

Without it every pytest-xdist worker runs all the migrations into its own ``test_<name>_gwN``
at the start of the run: four workers, four migrations at once (~5 s of CPU each, and the
server's DDL), before any test. Instead the controller (the pytest process that starts the
workers) migrates one template with ``manage.py migrate --run-syncdb`` in a subprocess while the
workers start and collect, and each worker then has pytest-django create its database with
Django's own ``TEST["TEMPLATE"]`` (``CREATE DATABASE ... TEMPLATE``), whose ``migrate`` finds
everything applied. The rest of Django's test-database creation runs as usual.

The template is built as ``<test name>_tpl<id>_b`` and renamed ``<test name>_tpl<id>`` once
migrated (a worker waits for the name, up to 10 minutes). If the migration fails, its output is
printed, the half-built database dropped, and the workers migrate their own databases as before.
Serial runs, SQLite, ``--reuse-db`` and ``--no-migrations`` are left to pytest-django. The
controller drops the template at the end; .ci/run's clean-up (``test_<db>*``) drops a leftover.

Loaded as a plugin (``-p tests.support.db_template`` in pyproject's pytest options); the workers'
side is ``use_template()``, called by tests/conftest.py's ``django_db_modify_db_settings``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = "TESTS_DB_TEMPLATE"  # the template's name, inherited by the workers
WAIT_SECONDS = 600
_BUILDING = "_b"
_builder_key = pytest.StashKey["_Builder"]()


def _admin_connection():
    import psycopg
    from django.db import connection

    s = connection.settings_dict
    return psycopg.connect(
        host=s["HOST"] or "127.0.0.1",
        port=s["PORT"] or 5432,
        user=s["USER"] or None,
        password=s["PASSWORD"] or None,
        dbname="postgres",
        autocommit=True,
        connect_timeout=10,
    )


def _exists(admin, *names: str) -> set[str]:
    rows = admin.execute("SELECT datname FROM pg_database WHERE datname = ANY(%s)", [list(names)])
    return {name for (name,) in rows.fetchall()}


class _Builder:
    def __init__(self, name: str, url: str) -> None:
        self.name = name
        self.building = name + _BUILDING
        self.url = url
        self.process: subprocess.Popen | None = None
        self.stopping = False  # the run ended first (a short run): nothing to report
        self.output = tempfile.TemporaryFile()  # noqa: SIM115 - the migration's, closed in stop()
        self.thread = threading.Thread(target=self._finish, daemon=True)

    def start(self) -> None:
        with _admin_connection() as admin:
            for name in (self.name, self.building):
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.execute(f'CREATE DATABASE "{self.building}"')
        parts = urlsplit(self.url)
        env = {**os.environ, "DATABASE_URL": urlunsplit(parts._replace(path=f"/{self.building}"))}
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "migrate", "--noinput", "--run-syncdb"],
            cwd=ROOT,
            env=env,
            stdout=self.output,
            stderr=subprocess.STDOUT,
        )
        self.thread.start()

    def _finish(self) -> None:
        assert self.process is not None
        returncode = self.process.wait()
        if self.stopping:
            return  # stop() kills the migration and drops what it left
        with _admin_connection() as admin:
            if returncode == 0:
                admin.execute(f'ALTER DATABASE "{self.building}" RENAME TO "{self.name}"')
                return
            admin.execute(f'DROP DATABASE IF EXISTS "{self.building}" WITH (FORCE)')
        self.output.seek(0)
        stream = sys.__stderr__  # not pytest's capture: this thread outlives any one test
        if stream is not None:
            stream.write(
                "tests/support/db_template.py: the template's migration failed; each worker"
                " migrates its own database:\n"
                f"{self.output.read().decode(errors='replace')[-3000:]}\n"
            )

    def stop(self) -> None:
        self.stopping = True
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
        self.thread.join(30)
        self.output.close()
        with contextlib.suppress(Exception), _admin_connection() as admin:
            for name in (self.name, self.building):
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _parallel(config: pytest.Config) -> bool:
    if hasattr(config, "workerinput") or not config.pluginmanager.hasplugin("xdist"):
        return False
    return bool(config.getoption("numprocesses", None)) and config.getoption("dist") != "no"


def pytest_configure(config: pytest.Config) -> None:
    """The controller of a parallel run starts building the template."""
    if not hasattr(config, "workerinput"):
        os.environ.pop(ENV, None)  # a pytest that a test started: not its parent run's template
    if not _parallel(config) or config.getoption("reuse_db") or config.getoption("nomigrations"):
        return
    from django.conf import settings

    db = settings.DATABASES["default"]
    url = os.environ.get("DATABASE_URL", "")
    if db["ENGINE"] != "django.db.backends.postgresql" or not url:
        return
    base = (db.get("TEST") or {}).get("NAME") or f"test_{db['NAME']}"
    name = f"{base[:40]}_tpl{uuid.uuid4().hex[:8]}"  # PostgreSQL names: 63 bytes at most
    builder = _Builder(name, url)
    builder.start()
    config.stash[_builder_key] = builder
    os.environ[ENV] = name  # the workers, started after this, inherit it


def pytest_unconfigure(config: pytest.Config) -> None:
    builder = config.stash.get(_builder_key, None)
    if builder is not None:
        builder.stop()


def use_template(config: pytest.Config) -> None:
    """In a worker: once the controller's template is migrated, have pytest-django create this
    worker's test database as a copy of it (Django's ``TEST["TEMPLATE"]``)."""
    name = os.environ.get(ENV)
    if not name or not hasattr(config, "workerinput"):
        return
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    deadline = time.monotonic() + WAIT_SECONDS
    with _admin_connection() as admin:
        while True:
            found = _exists(admin, name, name + _BUILDING)
            if name in found:
                break
            if not found or time.monotonic() > deadline:
                return  # the migration failed (or never ended): migrate as before
            time.sleep(0.2)
    connection.settings_dict.setdefault("TEST", {})["TEMPLATE"] = name
