"""The suite's test database is dropped at the end even when a test left a session on it."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import psycopg
import pytest
from django.db import connection

from tests.support.processes import ROOT

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def test_a_session_left_open_is_ended_named_and_the_database_dropped():
    s = connection.settings_dict
    # A database name of its own, so the inner run's test database is not this run's.
    name = f"leftopen_{uuid.uuid4().hex[:8]}"
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{name}",
    }
    try:
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--no-migrations",
             "tests/support/session_left_open.py"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
        )  # fmt: skip
        assert run.returncode == 0, run.stdout[-3000:]
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [f"test_{name}"])
            assert cursor.fetchone() is None, run.stdout[-3000:]
        assert "sessions left on the test database, ended" in run.stdout
    finally:  # what a failed run left behind
        with psycopg.connect(
            host=s["HOST"] or "127.0.0.1", port=s["PORT"] or 5432, user=s["USER"],
            password=s.get("PASSWORD") or None, dbname="postgres", autocommit=True,
        ) as admin:  # fmt: skip
            admin.execute(f'DROP DATABASE IF EXISTS "test_{name}" WITH (FORCE)')
