"""manage.py login_unlock: lifts a login lock, and lets an address in over its network's budget."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from tests.accounts.conftest import (
    OFFICE,
    attempt,
    lock,
    use_up_budget,
)
from tests.factories import DEFAULT_PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


def test_an_operator_lifts_a_lock_with_a_command(client):
    UserFactory(email="owner@example.com")
    lock(client, "owner@example.com", "2001:db8:9::1")
    out = io.StringIO()
    call_command("login_unlock", "Owner@example.com", "2001:db8:9::abcd", stdout=out)
    assert "2001:db8:9::/64" in out.getvalue()
    ok = attempt(client, "owner@example.com", DEFAULT_PASSWORD, ip="2001:db8:9::1")
    assert ok.status_code == 302


def test_an_operator_lets_an_address_in_over_the_budget_with_the_unlock_command(client):
    UserFactory(email="owner@example.com")
    use_up_budget(client, OFFICE)
    assert attempt(client, "owner@example.com", DEFAULT_PASSWORD, OFFICE).status_code == 429
    call_command("login_unlock", "owner@example.com", OFFICE, stdout=io.StringIO())
    assert attempt(client, "owner@example.com", DEFAULT_PASSWORD, OFFICE).status_code == 302
