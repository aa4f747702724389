"""The var_dir plugin (tests/support/var_dir.py): `make test` never touches the files of a running
`make run`, the suite has its own temporary VAR_DIR."""

from __future__ import annotations

import os
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
