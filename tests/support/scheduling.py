"""The order in which a parallel run (``make test``: pytest-xdist) hands tests out.

``make test`` runs ``--dist loadfile --no-loadscope-reorder``: a test module is one unit of work,
run whole by one worker in its own order, as in a serial run (a module's module-scoped set-ups,
Chromium and the scale tests' rows, happen once; tests that lean on what an earlier test of
their module did keep working), and the units go out in collection order to whichever worker
is free.

This plugin puts the long tests first in that order, so that no worker is still running a long
module after the others have finished: the tests that start the service's processes
(``processes``) and the modules in ``LONG_MODULES``. The list is a hint only: a long test
missing from it runs in its place and costs a longer end of the run, nothing else.

Loaded as a plugin (``-p tests.support.scheduling`` in pyproject's pytest options); applied in
each worker's collection (every worker must collect the same order). Without xdist (``-n 0``,
``-p no:xdist``) the order is left alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

# Long tests that start no service process: paths under tests/ (figures: PostgreSQL, one module
# alone, on a busy 2-core machine).
LONG_MODULES = frozenset(
    {
        "e2e/pytest_runs/test_test_database.py",  # a whole pytest run of its own (~15-40 s)
        "e2e/pytest_runs/test_var_dir.py",  # a pytest collection of its own (~10-25 s)
        "reviews/test_migrations.py",  # migrations run back and forth for each test (~40 s)
        "config/test_settings.py",  # a fresh interpreter for each probe of the settings (~25 s)
        "activity/test_selectors.py",  # two years of requests, days of rollup rows (~20 s)
        "activity/test_owner_dashboard.py",  # two years of a busy business's rollup (~15 s)
        "portal/test_selectors_scale.py",  # 33,000 requests loaded for the module (~13 s)
        "reviews/admin/test_base_scale.py",  # the same for the back office's lists (~13 s)
    }
)

TESTS_ROOT = Path(__file__).resolve().parent.parent


def _order(item: pytest.Item) -> int:
    """0: starts the service's processes (the fault tests' module alone is over a minute);
    1: long all the same; 2: the rest."""
    if item.get_closest_marker("processes") is not None:
        return 0
    path = item.path
    if path.is_relative_to(TESTS_ROOT) and path.relative_to(TESTS_ROOT).as_posix() in LONG_MODULES:
        return 1
    return 2


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]):
    """After every other plugin's hook (pytest-django's puts non-transactional database tests
    first), the long tests to the front."""
    result = yield
    if hasattr(config, "workerinput"):  # a pytest-xdist worker
        items.sort(key=_order)  # stable: within each kind the order stays
    return result
