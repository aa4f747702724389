"""Structured logging: one JSON object per line, for log shippers that read stdout."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from celery.app.trace import LOG_RECEIVED, LOG_SUCCESS
from gunicorn.glogging import Logger as GunicornBaseLogger

if TYPE_CHECKING:
    from wsgiref.types import WSGIEnvironment

# Attributes every LogRecord has; anything else was passed through ``extra=`` and is logged.
_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                payload[key] = value
        if record.exc_info:
            payload["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str)


class RoutineTaskFilter(logging.Filter):
    """Leaves out Celery's INFO lines about each run of ``tasks``: beat sending it, a worker
    receiving it, its success. For periodic tasks that run every few seconds (the dispatcher's
    sweep, the heartbeat) those are three lines a run, ~150,000 a day, that say nothing and
    bury the lines that do. Everything else passes: their retries and failures, what the tasks
    log themselves, other tasks' lines; and all of it when the root logger is at DEBUG
    (``LOG_LEVEL=DEBUG``)."""

    def __init__(self, tasks: Iterable[str] = ()) -> None:
        super().__init__()
        self.tasks = frozenset(tasks)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or _ROUTINE_LINES.get(record.name) != record.msg:
            return True
        if logging.getLogger().isEnabledFor(logging.DEBUG):
            return True
        return _task_name(record) not in self.tasks


# Logger -> message template of the line every run of a task writes there when all goes well.
# (Compared, not hashed: a message may be any object, a dict included.)
_ROUTINE_LINES = {
    "celery.beat": "Scheduler: Sending due task %s (%s)",
    "celery.worker.strategy": LOG_RECEIVED,
    "celery.app.trace": LOG_SUCCESS,
}


def _task_name(record: logging.LogRecord) -> str | None:
    """The task a routine line is about: the worker's lines carry their context as a mapping
    (``"name"``); beat's has the schedule entry's name, then the task's."""
    args = record.args
    if isinstance(args, Mapping):
        name = args.get("name")
        return name if isinstance(name, str) else None
    if isinstance(args, tuple) and len(args) == 2:
        return str(args[1])
    return None


class GunicornLogger(GunicornBaseLogger):  # type: ignore[misc]  # gunicorn ships no types
    """Gunicorn's logs through ``JsonFormatter`` (``logger_class`` in config/gunicorn.py).

    Gunicorn's ``access_log_format`` is a %-template: a path with a quote or a backslash made a
    line that was not JSON. Here each request is a log record whose fields are serialised by
    ``json.dumps``, so a line is valid JSON whatever the request contains; ``request_id`` is
    the one the response carries in ``X-Request-ID``. The query string is left out (it may
    carry OAuth codes or tokens)."""

    def setup(self, cfg: object) -> None:
        super().setup(cfg)
        formatter = JsonFormatter()
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                handler.setFormatter(formatter)

    def access(
        self, resp: object, req: object, environ: WSGIEnvironment, request_time: timedelta
    ) -> None:
        if not self.access_log_enabled:
            return
        atoms = self.atoms(resp, req, environ, request_time)
        status = atoms["s"]
        fields = {
            "method": atoms["m"],
            "path": atoms["U"],
            "status": int(status) if str(status).isdigit() else status,
            "duration_ms": round(request_time.total_seconds() * 1000, 3),
            "bytes": atoms["B"],
            "request_id": atoms.get("{x-request-id}o"),
            "remote": atoms["h"],
        }
        try:
            self.access_log.info(
                "%s %s %s", fields["method"], fields["path"], fields["status"], extra=fields
            )
        except Exception:
            self.exception("access log line not written")
