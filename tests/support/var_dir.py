"""The suite's own ``VAR_DIR``: a fresh temporary directory per test run.

Loaded as a plugin (``-p tests.support.var_dir`` in pyproject's pytest options), so it runs
before pytest-django imports the settings: the embedded default keeps its SQLite files, file
cache (rate-limit counters, the dispatch kick), generated secret key, broker and outbox under
``VAR_DIR``, and a test run must never share them with a ``make run`` going in another terminal
(``var/`` by default, or whatever ``VAR_DIR`` that shell exports). Processes the tests start
inherit it. Removed when the run ends; the test header prints it.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

VAR_DIR = tempfile.mkdtemp(prefix="reviews-test-var-")
os.environ["VAR_DIR"] = VAR_DIR
atexit.register(shutil.rmtree, VAR_DIR, ignore_errors=True)


def pytest_report_header(config):
    return f"VAR_DIR (this run's own, removed at the end): {VAR_DIR}"
