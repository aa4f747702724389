"""Celery's lines about each run of a frequent periodic task are left out of the logs at INFO."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from celery.app.trace import LOG_FAILURE, LOG_RECEIVED, LOG_RETRY, LOG_SUCCESS
from django.conf import settings

from core.logs import RoutineTaskFilter

SWEEP = "reviews.tasks.dispatch_due_messages"
SEND = "reviews.tasks.send_messages_task"


def configured_filter() -> RoutineTaskFilter:
    logging_config: dict[str, Any] = settings.LOGGING  # a logging.config.dictConfig dict
    return RoutineTaskFilter(tasks=logging_config["filters"]["routine_tasks"]["tasks"])


def record(logger: str, level: int, msg: object, *args: object) -> logging.LogRecord:
    """A record as Celery makes it: ``info(msg, context)`` or beat's positional arguments."""
    return logging.LogRecord(logger, level, __file__, 1, msg, args, None)


CONTEXT = {"id": "a1", "runtime": 0.01, "return_value": None, "exc": "Boom", "args": "()",
           "kwargs": "{}", "description": "raised", "eta": None}  # fmt: skip


def worker_line(logger: str, level: int, msg: str, task: str) -> logging.LogRecord:
    return record(logger, level, msg, {**CONTEXT, "name": task})


def beat_line(entry: str, task: str) -> logging.LogRecord:
    return record("celery.beat", logging.INFO, "Scheduler: Sending due task %s (%s)", entry, task)


def test_the_frequent_periodic_tasks_are_the_routine_ones():
    tasks = settings.LOGGING["filters"]["routine_tasks"]["tasks"]
    assert set(tasks) == {SWEEP, "core.tasks.heartbeat"}  # hourly and daily ones are not
    assert "routine_tasks" in settings.LOGGING["handlers"]["stdout"]["filters"]


def test_a_sweeps_run_leaves_no_line_at_info():
    keep = configured_filter().filter
    assert not keep(beat_line("dispatch-due-messages", SWEEP))
    assert not keep(worker_line("celery.worker.strategy", logging.INFO, LOG_RECEIVED, SWEEP))
    assert not keep(worker_line("celery.app.trace", logging.INFO, LOG_SUCCESS, SWEEP))


TRACE = "celery.app.trace"


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(worker_line(TRACE, logging.ERROR, LOG_FAILURE, SWEEP), id="failure"),
        pytest.param(worker_line(TRACE, logging.INFO, LOG_RETRY, SWEEP), id="retry"),
        pytest.param(worker_line(TRACE, logging.INFO, LOG_SUCCESS, SEND), id="a send"),
        pytest.param(
            beat_line("purge-opt-out-events", "reviews.tasks.purge_opt_out_events"), id="daily"
        ),
        pytest.param(
            record("reviews.services.dispatch", logging.INFO, "dispatched %s", 3), id="own line"
        ),
        pytest.param(
            record("celery.worker.consumer", logging.INFO, "Connected to %s", "redis://"),
            id="startup",
        ),
        pytest.param(record("some.library", logging.INFO, {"a": "dict"}), id="unhashable"),
    ],
)
def test_failures_other_tasks_and_the_tasks_own_lines_stay(line):
    assert configured_filter().filter(line)


def test_everything_stays_at_debug():
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.DEBUG)
    try:
        assert configured_filter().filter(beat_line("dispatch-due-messages", SWEEP))
    finally:
        root.setLevel(level)
