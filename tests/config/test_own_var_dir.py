"""`make test` never touches the files of a running `make run`: the suite has its own VAR_DIR."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]


def test_the_suite_runs_in_its_own_temporary_var_dir():
    var_dir = Path(settings.VAR_DIR)
    assert var_dir != ROOT / "var"
    assert var_dir.parent == Path(tempfile.gettempdir())
    assert var_dir.name.startswith("reviews-test-var-")
    assert os.environ["VAR_DIR"] == str(var_dir)  # inherited by the processes tests start
    cache = settings.CACHES["default"]
    if cache["BACKEND"].endswith("FileBasedCache"):
        assert Path(cache["LOCATION"]).parent == var_dir
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        assert Path(db["TEST"]["NAME"]).parent == var_dir


def test_an_exported_var_dir_is_not_used_and_the_header_names_the_run_s_own(tmp_path):
    """A shell that exported VAR_DIR for `make run` still gets a separate one for the tests."""
    live = tmp_path / "live-var"
    live.mkdir()
    env = {**os.environ, "VAR_DIR": str(live)}
    # The embedded default (no database or Redis server, no secret key), which writes its
    # SQLite files, cache and generated secret key under VAR_DIR.
    for name in ("SECRET_KEY", "DATABASE_URL", "REDIS_URL", "CI_REDIS_URL"):
        env.pop(name, None)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-p",
            "no:cacheprovider",
            "tests/config/test_own_var_dir.py",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "VAR_DIR (this run's own" in run.stdout
    assert str(live) not in run.stdout
    assert list(live.iterdir()) == []  # no secret key, cache or database written there
