"""Liveness and readiness probes.

Served by a middleware placed first, so that a load balancer probing by IP over plain HTTP is
answered before host validation, HTTPS redirects, sessions or authentication run.

* ``GET /healthz``: the process answers; touches nothing else.
* ``GET /readyz``: the database and the broker answer; 503 naming the failing part otherwise.
  Also reports how long ago a worker last ran beat's heartbeat task (information, not a check:
  the web can serve while workers restart), and the API rate limiter's store with the number of
  requests this process served unlimited because the store was down (information too: the API
  fails open).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NotRequired, Required, TypedDict

from django.conf import settings
from django.core.cache import cache
from django.db import connections
from django.http import HttpRequest, HttpResponseBase, JsonResponse

from .ratelimit_store import readiness_status

# Where a worker records when it last ran beat's heartbeat task (core.tasks.heartbeat).
HEARTBEAT_CACHE_KEY = "heartbeat:worker"


class CheckResult(TypedDict, total=False):
    """One readiness check: whether it passed, and what was checked or why it failed."""

    ok: Required[bool]
    vendor: str  # the database's
    transport: str  # the broker's
    error: str  # a failed check's exception, shortened


class Readiness(TypedDict):
    """The body of ``/readyz``."""

    status: str  # "ok" or "unavailable"
    checks: dict[str, CheckResult]
    worker_heartbeat_age_s: float | None
    rate_limiter: Mapping[str, object]
    failing: NotRequired[list[str]]  # the names of the failed checks, if any


def _check_database() -> CheckResult:
    connection = connections["default"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"ok": True, "vendor": connection.vendor}


def _check_broker() -> CheckResult:
    if settings.REDIS_URL:
        import redis

        client = redis.Redis.from_url(
            settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=1
        )
        try:
            client.ping()
        finally:
            client.close()
        return {"ok": True, "transport": "redis"}
    options = settings.CELERY_BROKER_TRANSPORT_OPTIONS
    for key in ("data_folder_in", "control_folder"):
        folder = Path(options[key])
        if not folder.is_dir() or not _writable(folder):
            raise OSError(f"broker folder {folder} is not writable")
    return {"ok": True, "transport": "filesystem"}


def _writable(folder: Path) -> bool:
    probe = folder / f".probe-{time.monotonic_ns()}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError:
        return False
    return True


def record_heartbeat() -> None:
    """A worker ran the heartbeat task now (beat sends it every ``HEARTBEAT_INTERVAL``)."""
    cache.set(HEARTBEAT_CACHE_KEY, time.time(), timeout=None)


def _worker_heartbeat_age() -> float | None:
    try:
        last = cache.get(HEARTBEAT_CACHE_KEY)
    except Exception:  # the cache being down is reported by the broker check in Redis mode
        return None
    return None if last is None else round(time.time() - float(last), 1)


def _rate_limiter() -> Mapping[str, object]:
    """Information, never a failing check: the API fails open while its counter store is down
    (``unlimited_requests`` counts the requests this process served without a limit)."""
    try:
        return readiness_status()
    except Exception as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}


READINESS_CHECKS: dict[str, Callable[[], CheckResult]] = {
    "database": _check_database,
    "broker": _check_broker,
}


def readiness() -> tuple[int, Readiness]:
    checks: dict[str, CheckResult] = {}
    for name, check in READINESS_CHECKS.items():
        try:
            checks[name] = check()
        except Exception as exc:
            checks[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
    failing = [name for name, result in checks.items() if not result["ok"]]
    body: Readiness = {
        "status": "unavailable" if failing else "ok",
        "checks": checks,
        "worker_heartbeat_age_s": _worker_heartbeat_age(),
        "rate_limiter": _rate_limiter(),
    }
    if failing:
        body["failing"] = failing
    return (503 if failing else 200), body


class HealthCheckMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if request.path == "/healthz":
            return JsonResponse({"status": "ok"}, headers={"Cache-Control": "no-store"})
        if request.path == "/readyz":
            status, body = readiness()
            return JsonResponse(body, status=status, headers={"Cache-Control": "no-store"})
        return self.get_response(request)
