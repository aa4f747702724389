"""The password reset's worker side: the task sends to every matching owner and reports how many."""

from __future__ import annotations

import pytest

from accounts import services
from tests.accounts.conftest import mails
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_the_worker_sends_to_each_matching_owner_and_reports_the_count(outbox):
    UserFactory(email="owner@example.com")
    assert services.password_reset_email_send(email="owner@example.com") == 1
    assert services.password_reset_email_send(email="nobody@example.com") == 0
    assert len(mails(outbox)) == 1
