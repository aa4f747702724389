"""The request id follows an API request into the tasks it causes, on a real worker."""

from __future__ import annotations

import json

import pytest
import requests

from reviews.models import BusinessSettings
from tests.factories import ReviewSiteFactory, UserFactory
from tests.support.oauth import issue_tokens
from tests.support.processes import ServiceProcesses

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]


def json_lines(log: str, process: str) -> list[dict]:
    """The JSON log lines one process type wrote (honcho prefixes ``time worker.1 | ``)."""
    lines = []
    for raw in log.splitlines():
        prefix, sep, rest = raw.partition(" | ")
        if sep and process in prefix and rest.startswith("{"):
            lines.append(json.loads(rest))
    return lines


def test_the_worker_logs_the_send_an_api_request_caused_under_that_request_id(tmp_path):
    owner = UserFactory()
    BusinessSettings.objects.create(
        owner=owner, send_window_applies_to=BusinessSettings.WindowAppliesTo.NONE
    )
    ReviewSiteFactory(owner=owner)
    access, _ = issue_tokens(owner)
    request_id = "trace-29-0123456789"
    # No beat: the API request's on-commit kick is what dispatches the row.
    with ServiceProcesses(tmp_path, ["web", "worker"], embedded_broker=True) as svc:
        svc.wait_for(lambda: requests.get(f"{svc.base_url}/healthz", timeout=2).ok, what="web")
        response = requests.post(
            f"{svc.base_url}/api/zapier/send-review-request",
            json={"first_name": "Jane", "email": "jane@example.com", "delay_hours": 0},
            headers={"Authorization": f"Bearer {access}", "X-Request-ID": request_id},
            timeout=10,
        )
        assert response.status_code == 201, response.text

        def send_logged():
            return [
                line
                for line in json_lines(svc.log(), "worker")
                if line.get("logger") == "celery.app.trace"
                and "send_messages_task" in line["message"]
                and "succeeded" in line["message"]
            ]

        (succeeded,) = svc.wait_for(send_logged, timeout=60, what="the send task's success line")
        dispatched = [
            line
            for line in json_lines(svc.log(), "worker")
            if line["message"] == "dispatched due messages"
        ]

    assert succeeded["request_id"] == request_id
    assert dispatched and dispatched[0]["request_id"] == request_id
