"""A request id on every request: taken from a sane incoming ``X-Request-ID`` or generated,
returned in the response header and attached to every log line written while handling it.

It follows the request into the Celery tasks it causes: published tasks carry it in a message
header, and the worker restores it while the task runs (and into the tasks that task publishes),
so an API call can be followed into the send it caused (``connect_task_signals``)."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from celery import Task
    from django.http import HttpRequest, HttpResponseBase

request_id_var: ContextVar[str | None] = ContextVar("request_id", default=None)

_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{8,128}$")


class RequestIdMiddleware:
    header = "X-Request-ID"

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        incoming = request.headers.get(self.header, "")
        request_id = incoming if _SAFE_ID.match(incoming) else uuid.uuid4().hex
        request.request_id = request_id  # type: ignore[attr-defined]  # ours; core.errors reads it
        token = request_id_var.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            request_id_var.reset(token)
        response[self.header] = request_id
        return response


class RequestIdLogFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        return True


# The Celery message header that carries the request id from publisher to worker.
TASK_HEADER = "request_id"


def _add_request_id_header(headers: dict[str, Any] | None = None, **kwargs: object) -> None:
    """``before_task_publish``: the current request id (a web request's, or the running task's)
    travels with the task."""
    request_id = request_id_var.get()
    if request_id and headers is not None:
        headers.setdefault(TASK_HEADER, request_id)


def _restore_request_id(task: Task[..., object] | None = None, **kwargs: object) -> None:
    """``task_prerun``: the task runs, and logs, under the id it was published with. Not for
    eager runs (``task.apply()`` in the caller's thread, which keeps the caller's id)."""
    if task is None or task.request.is_eager:
        return
    request_id = getattr(task.request, TASK_HEADER, None)
    request_id_var.set(request_id if isinstance(request_id, str) else None)


def _forget_request_id(task: Task[..., object] | None = None, **kwargs: object) -> None:
    """``task_postrun``: the next task on this worker thread starts without it."""
    if task is None or task.request.is_eager:
        return
    request_id_var.set(None)


def connect_task_signals() -> None:
    """Called once per process by ``core.apps.CoreConfig.ready`` (web, worker and beat)."""
    from celery.signals import before_task_publish, task_postrun, task_prerun

    before_task_publish.connect(_add_request_id_header, weak=False)
    task_prerun.connect(_restore_request_id, weak=False)
    task_postrun.connect(_forget_request_id, weak=False)
