"""config/gunicorn.py hooks (the settings themselves are exercised by the process tests,
tests/e2e/processes/)."""

from __future__ import annotations

import gc

from config import gunicorn as gunicorn_config


def test_a_worker_freezes_what_it_loaded_before_serving():
    """Objects loaded at start leave the collector's generations, so full collections during
    requests stay short (no ~100 ms pauses in the p99)."""
    assert gc.get_freeze_count() == 0
    try:
        gunicorn_config.post_worker_init(worker=None)
        assert gc.get_freeze_count() > 1000
    finally:
        gc.unfreeze()
