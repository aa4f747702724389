"""A separate pytest run from a shell that exported VAR_DIR for `make run`: the run still gets a
VAR_DIR of its own, which its report header names."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.processes import ROOT


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
            "tests/e2e/pytest_runs/test_var_dir.py",
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
