"""Each pytest-xdist worker's own Redis database: the run's base database plus the worker's number.

``REDIS_URL`` names the run's base database (``/7`` on a developer's machine, ``/1`` in CI);
worker ``gwN`` uses database base + N: ``gw0`` the base itself, ``gw1`` the next one, and so on.
A serial run (``-n 0``, ``-p no:xdist``) uses the base alone. With 4 workers and base 1, the run
uses databases 1-4; the base plus the worker count must stay below the server's 16 databases.

Everything a worker does with Redis stays in its database: its Django cache, its Celery broker
(the tasks it sends), the processes its tests start (they inherit ``REDIS_URL``) and their
workers' queues. Without this, one worker's Celery worker process would take the tasks another
worker's test sent, against the other's test database.

Loaded as a plugin (``-p tests.support.worker_redis`` in pyproject's pytest options) so it runs
before pytest-django imports the settings: xdist names the worker in ``PYTEST_XDIST_WORKER``
before the worker's pytest starts. A pytest that a test starts in a subprocess inherits that
variable and the URL already moved; the marker below keeps it from moving the URL again (it
runs while its test waits, so sharing the worker's database is a serial run's sharing).
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

REDIS_DATABASES = 16  # redis-server's default ``databases``
_MARKER = "TESTS_REDIS_URL_MOVED_FOR"  # "<xdist run id>:<worker>" once this worker's URL is set


def worker_redis_url(url: str, worker: str) -> str:
    """``url`` with its database number moved up by the worker's number (``gw3``: +3)."""
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss"):
        raise RuntimeError(
            f"REDIS_URL {url!r}: parallel tests (pytest-xdist) give each worker a database of its"
            " own, which needs a redis:// or rediss:// URL; run serially with -n 0"
        )
    base = int(parts.path.strip("/") or 0)
    number = base + int(worker.removeprefix("gw"))
    if number >= REDIS_DATABASES:
        raise RuntimeError(
            f"REDIS_URL {url!r}: worker {worker} would use Redis database {number}, past the"
            f" server's {REDIS_DATABASES}; choose a lower base database or fewer workers (-n)"
        )
    return urlunsplit(parts._replace(path=f"/{number}"))


def _move_for_this_worker() -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    url = os.environ.get("REDIS_URL")
    if not worker or not url:
        return
    marker = f"{os.environ.get('PYTEST_XDIST_TESTRUNUID', '')}:{worker}"
    if os.environ.get(_MARKER) == marker:
        return  # a pytest started by a test of this worker: the URL is already this worker's
    os.environ["REDIS_URL"] = worker_redis_url(url, worker)
    os.environ[_MARKER] = marker


_move_for_this_worker()
