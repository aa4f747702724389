"""/metrics: only with the bearer token; counts requests by view and status."""

from __future__ import annotations

import pytest

from tests.support.metrics import sample

pytestmark = pytest.mark.django_db


def test_metrics_do_not_exist_without_a_token_setting(client, settings):
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 404


def test_metrics_refuse_a_missing_or_wrong_token(client, settings):
    settings.METRICS_TOKEN = "scrape-secret"
    missing = client.get("/metrics")
    wrong = client.get("/metrics", HTTP_AUTHORIZATION="Bearer not-it")
    assert (missing.status_code, wrong.status_code) == (401, 401)
    assert missing["WWW-Authenticate"].startswith("Bearer")
    assert b"rr_http_requests_total" not in missing.content + wrong.content


def test_requests_are_counted_by_view_and_status(client, settings):
    settings.METRICS_TOKEN = "scrape-secret"
    auth = {"HTTP_AUTHORIZATION": "Bearer scrape-secret"}
    labels = {"view": "login", "method": "GET", "status": "200"}
    before = sample(
        client.get("/metrics", **auth).content.decode(), "rr_http_requests_total", **labels
    )
    client.get("/accounts/login/")
    client.get("/accounts/login/")
    response = client.get("/metrics", **auth)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert sample(text, "rr_http_requests_total", **labels) == before + 2
    assert sample(text, "rr_http_request_duration_seconds_count", view="login") >= 2
    assert "rr_dispatch_backlog_messages" in text


def test_the_alert_rules_use_only_metrics_the_service_exports(client, settings):
    import re
    from pathlib import Path

    import yaml

    rules = yaml.safe_load(
        (Path(__file__).resolve().parents[2] / "docs" / "prometheus-rules.yml").read_text()
    )
    used = {
        name
        for group in rules["groups"]
        for rule in group["rules"]
        for name in re.findall(r"\brr_\w+", rule["expr"])
    }
    settings.METRICS_TOKEN = "scrape-secret"
    text = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-secret").content.decode()
    exported = set(re.findall(r"^# TYPE (\w+)", text, re.M))
    assert used and used <= exported, used - exported
