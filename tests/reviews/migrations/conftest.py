"""The migration tests of one module share its moves: each test starts from wherever the previous
one left the database (moving back from a migration just applied is cheap, from the latest is
not: Django replays the project's whole history to undo it), and the module ends on the latest
schema again."""

from __future__ import annotations

import pytest

from tests.support.migrations import migrate_to_latest


@pytest.fixture(scope="module")
def latest_after_the_module(django_db_setup, django_db_blocker):
    yield
    with django_db_blocker.unblock():
        migrate_to_latest()
