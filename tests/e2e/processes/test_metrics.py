"""A real send on a worker process moves the sent counter that the web process serves."""

from __future__ import annotations

import pytest
import requests

from reviews.models import BusinessSettings
from tests.factories import ReviewSiteFactory, UserFactory
from tests.support.metrics import sample
from tests.support.oauth import issue_tokens
from tests.support.processes import ServiceProcesses


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_a_send_on_the_worker_moves_the_sent_counter_the_web_serves(tmp_path):
    owner = UserFactory()
    BusinessSettings.objects.create(
        owner=owner, send_window_applies_to=BusinessSettings.WindowAppliesTo.NONE
    )
    ReviewSiteFactory(owner=owner)
    access, _ = issue_tokens(owner)
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    env = {"METRICS_TOKEN": "scrape-secret", "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir)}
    sent = {"channel": "email", "provider": "outbox", "outcome": "sent"}
    with ServiceProcesses(tmp_path, ["web", "worker"], embedded_broker=True, env=env) as svc:
        svc.wait_for(lambda: requests.get(f"{svc.base_url}/healthz", timeout=2).ok, what="web")

        def scrape(**headers) -> requests.Response:
            return requests.get(f"{svc.base_url}/metrics", headers=headers, timeout=10)

        auth = {"Authorization": "Bearer scrape-secret"}
        assert scrape().status_code == 401
        assert sample(scrape(**auth).text, "rr_messages_total", **sent) == 0
        response = requests.post(
            f"{svc.base_url}/api/zapier/send-review-request",
            json={"first_name": "Jane", "email": "jane@example.com", "delay_hours": 0},
            headers={"Authorization": f"Bearer {access}"},
            timeout=10,
        )
        assert response.status_code == 201, response.text
        task_done = {"task": "reviews.tasks.send_messages_task", "outcome": "success"}

        def sent_and_task_done() -> bool:
            # The task's outcome is counted after the send inside it: a scrape in between sees
            # the message sent and the task still running.
            text = scrape(**auth).text
            return (
                sample(text, "rr_messages_total", **sent) == 1
                and sample(text, "rr_celery_tasks_total", **task_done) >= 1
            )

        svc.wait_for(sent_and_task_done, timeout=60, what="the sent counter at 1, its task done")
        text = scrape(**auth).text

    assert (
        sample(text, "rr_provider_call_duration_seconds_count", channel="email", provider="outbox")
        == 1
    )
    assert (
        sample(
            text,
            "rr_celery_tasks_total",
            task="reviews.tasks.send_messages_task",
            outcome="success",
        )
        >= 1
    )
    assert (
        sample(
            text,
            "rr_http_requests_total",
            view="connector_api:send-review-request",
            method="POST",
            status="201",
        )
        == 1
    )
