"""How the parallel run (``make test``: pytest-xdist ``--dist loadgroup``) hands tests out.

Loaded as a plugin (``-p tests.support.scheduling`` in pyproject's pytest options). Two rules,
applied in each worker's collection (every worker must collect the same order):

* **A module's tests that share a module- or class-scoped fixture stay on one worker**
  (``xdist_group`` named after the module): Chromium (one per browser test module) and the
  scale tests' rows are set up once, as in a serial run, not once per worker that got one of
  the module's tests.
* **The long tests go first.** Workers take the next test when they are free; a 15 s test
  taken last leaves the other workers idle while it runs. Tests that start the service's
  processes (``processes``) and the modules in ``LONG_MODULES`` (a pytest of their own, large
  query-plan data) run first. The list is a hint only: a long test missing from it runs in its
  place and costs a longer end of the run, nothing else.

Without xdist (``-n 0``, ``-p no:xdist``) the order and the marks are left alone.
"""

from __future__ import annotations

import pytest

# Long tests that start no service process: file names, wherever the file lives.
LONG_MODULES = frozenset(
    {
        "test_test_database.py",  # a whole pytest run of its own (~14 s)
        "test_activity_rollup.py",  # days of events for the query plans (~15 s)
        "test_dashboard.py",  # the same for the dashboard's series (~6 s)
    }
)


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    fixtures = getattr(item, "_fixtureinfo", None)
    if fixtures is None:
        return False
    return any(
        definition.scope in ("module", "class")
        for definitions in fixtures.name2fixturedefs.values()
        for definition in definitions
    )


def _long(item: pytest.Item) -> bool:
    return item.get_closest_marker("processes") is not None or item.path.name in LONG_MODULES


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]):
    """Around every other plugin's hook: the groups before pytest-xdist's reads them, the order
    after pytest-django's (non-transactional database tests first) is made."""
    worker = hasattr(config, "workerinput")  # a pytest-xdist worker
    if worker:
        for item in items:
            if _shares_a_module_fixture(item):
                item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
    result = yield
    if worker:
        items.sort(key=lambda item: not _long(item))  # stable: the rest keep their order
    return result
