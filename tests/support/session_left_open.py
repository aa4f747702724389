"""A test that leaves a session open on the test database (run by
``test_test_database.py`` in a pytest of its own; not collected by the suite)."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection

LEFT_OPEN: list[psycopg.Connection] = []


@pytest.mark.django_db
def test_leaves_a_session_open():
    s = connection.settings_dict
    session = psycopg.connect(
        host=s["HOST"] or "127.0.0.1", port=s["PORT"] or 5432, user=s["USER"], dbname=s["NAME"]
    )
    session.execute("SELECT 1")
    LEFT_OPEN.append(session)
