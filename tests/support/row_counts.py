"""How many rows each database statement touched: checks that work is done in bounded batches."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection


@contextmanager
def statement_row_counts() -> Iterator[list[int]]:
    """Collect the row count of every statement run on the default connection in the block."""
    counts: list[int] = []

    def record(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        counts.append(context["cursor"].rowcount)
        return result

    with connection.execute_wrapper(record):
        yield counts
