"""Database helpers shared by every app: bounded housekeeping deletes."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.db.models import Model, QuerySet


def delete_in_batches(
    queryset: QuerySet[Model], *, batch_size: int | None = None
) -> tuple[int, dict[str, int]]:
    """Delete the rows of ``queryset`` a batch at a time, each batch in its own transaction.

    One unbounded ``DELETE`` of a million expired rows holds its locks, bloats the WAL and
    blocks vacuum until it ends; here each transaction deletes at most ``batch_size`` rows
    (``PURGE_BATCH_SIZE`` by default), chosen by primary key, and the loop runs until a batch
    comes back short. The filter is re-evaluated for every batch, so rows that stop matching
    (or are deleted by a concurrent purge) are simply not seen again. Returns the same pair
    as ``QuerySet.delete()``: the total of rows deleted (cascades included) and the count per
    model label.
    """
    size = settings.PURGE_BATCH_SIZE if batch_size is None else batch_size
    if size < 1:
        raise ValueError("batch_size must be at least 1")
    queryset = queryset.order_by()
    pks = queryset.values_list("pk", flat=True)
    total = 0
    per_model: dict[str, int] = {}
    while True:
        with transaction.atomic(using=queryset.db):
            batch = list(pks[:size])
            if batch:
                # The filter again: a row that stopped matching since the SELECT stays.
                deleted, counts = queryset.filter(pk__in=batch).delete()
                total += deleted
                for label, n in counts.items():
                    per_model[label] = per_model.get(label, 0) + n
        if len(batch) < size:
            return total, per_model
