"""The order in which a parallel run (``make test``: pytest-xdist) hands tests out.

``make test`` runs ``--dist loadfile --no-loadscope-reorder``: a test module is one unit of work,
run whole by one worker in its own order, as in a serial run (a module's module-scoped set-ups,
Chromium and the scale tests' rows, happen once; tests that lean on what an earlier test of
their module did keep working), and the units go out in collection order to whichever worker
is free.

This plugin hands out the longest modules first (longest processing time first), so that no
worker is still running a long module after the others have finished: the modules in
``LONG_MODULES``, longest first, then the other tests that start the service's processes
(``processes``), then the rest. The figures are a hint only: a long module missing from the list
runs in its place and costs a longer end of the run, nothing else.

Loaded as a plugin (``-p tests.support.scheduling`` in pyproject's pytest options); applied in
each worker's collection (every worker must collect the same order). Without xdist (``-n 0``,
``-p no:xdist``) the order is left alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

# Seconds each module takes in make test's parallel run on a busy 2-core machine (paths under
# tests/; rounded, from a timeline of one run): the order, not a budget.
LONG_MODULES = {
    "e2e/processes/test_faults.py": 145,  # a worker killed, PostgreSQL restarted, the broker
    "reviews/migrations/test_0016_locations_for_existing_businesses.py": 90,
    "reviews/migrations/test_0005_email_key_idna.py": 70,
    "e2e/browser/test_dashboard.py": 58,
    "activity/test_owner_dashboard.py": 45,  # two years of a busy business's rollup
    "activity/test_selectors.py": 41,  # two years of requests, days of rollup rows
    "e2e/processes/test_webhooks.py": 40,
    "e2e/processes/test_delivery.py": 40,
    "config/test_settings.py": 38,  # a fresh interpreter for each probe of the settings
    "e2e/processes/test_procfile.py": 36,
    "e2e/pytest_runs/test_test_database.py": 35,  # a whole pytest run of its own
    "e2e/processes/test_zapier_app.py": 33,
    "reviews/admin/test_base_scale.py": 23,  # 33,000 requests loaded for the module
    "e2e/browser/test_activity_and_feedback.py": 23,
    "e2e/browser/test_message_editor.py": 23,
    "reviews/migrations/test_0012_activity_daily_rollup.py": 20,
    "activity/test_migrations.py": 19,
    "portal/views/test_requests.py": 19,
}
PROCESSES_SECONDS = 15  # a processes module not listed: after the listed ones
TESTS_ROOT = Path(__file__).resolve().parent.parent


def _seconds(item: pytest.Item) -> int:
    path = item.path
    if path.is_relative_to(TESTS_ROOT):
        seconds = LONG_MODULES.get(path.relative_to(TESTS_ROOT).as_posix())
        if seconds is not None:
            return seconds
    if item.get_closest_marker("processes") is not None:
        return PROCESSES_SECONDS
    return 0


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]):
    """After every other plugin's hook (pytest-django's puts non-transactional database tests
    first), the long modules to the front, longest first."""
    result = yield
    if hasattr(config, "workerinput"):  # a pytest-xdist worker
        items.sort(key=lambda item: -_seconds(item))  # stable: a module stays together
    return result
