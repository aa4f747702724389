"""manage.py dispatch_due: the dispatcher's claim from the command line, and its dry run."""

from __future__ import annotations

import pytest

from reviews import tasks
from reviews.models import Message
from tests.reviews.management.commands.conftest import run
from tests.support.delivery import email_request, step

pytestmark = pytest.mark.django_db


def test_dispatch_due_dry_run_lists_due_rows_and_claims_nothing(business):
    request = email_request(business)
    out = run("dispatch_due", "--dry-run")
    assert "1 due message(s) would be claimed" in out
    assert str(step(request, 0).pk) in out
    assert step(request, 0).status == "pending"


def test_dispatch_due_claims(business, monkeypatch):
    monkeypatch.setattr(tasks.send_messages_task, "delay", lambda message_ids: None)
    email_request(business)
    assert "claimed 1" in run("dispatch_due")
    assert Message.objects.filter(status="queued").count() == 1
