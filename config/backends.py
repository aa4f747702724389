"""The database, cache, broker and e-mail settings built from their URLs (config/settings.py).

Each function returns the value of one Django or Celery setting, with the tuning this service
needs on top of what the URL says. Imports no app code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import environ

from config.env import env


def database(url: str, *, var_dir: Path) -> dict[str, Any]:
    """``DATABASES["default"]`` from ``url`` (PostgreSQL), or SQLite in ``var_dir`` when empty.

    Reads SQLITE_BUSY_TIMEOUT (SQLite), CONN_MAX_AGE and DATABASE_CONNECT_TIMEOUT (others).
    """
    db: dict[str, Any] = environ.Env.db_url_config(url or f"sqlite:///{var_dir / 'db.sqlite3'}")
    if db["ENGINE"] == "django.db.backends.sqlite3":
        # Web, worker and beat are separate processes writing one file: WAL lets readers and one
        # writer proceed together, IMMEDIATE takes the write lock at BEGIN (so a transaction waits
        # for the busy timeout instead of failing on lock upgrade), and the timeout is the wait.
        db["OPTIONS"] = {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": env.int("SQLITE_BUSY_TIMEOUT", default=20),
        }
        # A file, not :memory:, so that processes started by tests (worker, beat, gunicorn)
        # share it.
        db["TEST"] = {"NAME": str(var_dir / "test.sqlite3")}
    else:
        db["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
        db["CONN_HEALTH_CHECKS"] = True
        db.setdefault("OPTIONS", {})
        # Fail fast instead of hanging a worker when the database is unreachable.
        db["OPTIONS"].setdefault("connect_timeout", env.int("DATABASE_CONNECT_TIMEOUT", default=5))
    return db


def redis_cache(url: str) -> dict[str, Any]:
    """``CACHES["default"]`` on Redis."""
    return {
        "BACKEND": "core.cache.RedisCache",
        "LOCATION": url,
        "KEY_PREFIX": "rr",
        # A dead Redis must not hang requests: short socket timeouts, callers fail open.
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
    }


def file_cache(location: Path) -> dict[str, Any]:
    """``CACHES["default"]`` without Redis: files shared by web, worker and beat on one machine
    (local memory would be per process)."""
    return {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": str(location),
        # Past MAX_ENTRIES (300 by default) the file cache deletes a third of its files at
        # random, generation keys of the token and settings caches among them
        # (core/versioned_cache.py). Entries here are few and expire by their TTL.
        "OPTIONS": {"MAX_ENTRIES": 100_000},
    }


def redis_broker_options(*, visibility_timeout: int) -> dict[str, Any]:
    """``CELERY_BROKER_TRANSPORT_OPTIONS`` for the Redis broker."""
    return {
        # Longer than any task's hard time limit; never used as a calendar (no long ETAs).
        "visibility_timeout": visibility_timeout,
        "socket_connect_timeout": 2,
    }


def filesystem_broker_options(broker_dir: Path) -> dict[str, Any]:
    """``CELERY_BROKER_TRANSPORT_OPTIONS`` for kombu's filesystem transport (a broker that needs
    no server), its folders created under ``broker_dir``."""
    for sub in ("queue", "control", "processed"):
        (broker_dir / sub).mkdir(parents=True, exist_ok=True)
    return {
        "data_folder_in": str(broker_dir / "queue"),
        "data_folder_out": str(broker_dir / "queue"),
        "control_folder": str(broker_dir / "control"),
        "processed_folder": str(broker_dir / "processed"),
        "store_processed": False,
    }


class Smtp(NamedTuple):
    """The SMTP settings an EMAIL_URL gives; without one, Django's defaults."""

    backend: str | None = None
    host: str = "localhost"
    port: int = 25
    user: str = ""
    password: str = ""
    use_tls: bool = False
    use_ssl: bool = False


def smtp(email_url: str) -> Smtp:
    """Parse EMAIL_URL, django-environ's form (``smtp://user:pass@host:587?tls=1``,
    ``smtp+ssl://user:pass@host:465``)."""
    if not email_url:
        return Smtp()
    mail: dict[str, Any] = environ.Env.email_url_config(email_url)
    options = mail.get("OPTIONS", {})
    return Smtp(
        backend=mail.get("EMAIL_BACKEND"),
        host=mail["EMAIL_HOST"] or "localhost",
        port=mail["EMAIL_PORT"] or 25,
        user=mail["EMAIL_HOST_USER"] or "",
        password=mail["EMAIL_HOST_PASSWORD"] or "",
        use_tls=bool(mail.get("EMAIL_USE_TLS") or options.get("TLS")),
        use_ssl=bool(mail.get("EMAIL_USE_SSL") or options.get("SSL")),
    )
