"""Helpers of the model tests: a fixed moment, and a statement the database must refuse."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import IntegrityError, transaction

AT = datetime(2026, 6, 10, 16, 0, tzinfo=UTC)


def _integrity_error(create) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        create()
