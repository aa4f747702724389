from __future__ import annotations

import pytest
from django.db import OperationalError
from django.test import override_settings

from core import health
from core.tasks import heartbeat


def test_healthz_answers_without_touching_the_database(client):
    # No django_db mark: pytest-django makes any database access here raise.
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert response["Cache-Control"] == "no-store"


def test_healthz_answers_any_host_and_is_never_redirected_to_https(client):
    with override_settings(SECURE_SSL_REDIRECT=True, ALLOWED_HOSTS=["reviews.example.com"]):
        response = client.get("/healthz", HTTP_HOST="10.0.0.7:8000")
    assert response.status_code == 200


@pytest.mark.django_db
def test_readyz_reports_database_and_broker(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["broker"]["ok"] is True
    assert "worker_heartbeat_age_s" in body


@pytest.mark.django_db
def test_readyz_reports_how_long_ago_a_worker_ran_the_heartbeat(client):
    heartbeat.apply()  # as a worker runs it when beat sends it
    age = client.get("/readyz").json()["worker_heartbeat_age_s"]
    assert 0 <= age < 5


@pytest.mark.django_db
def test_readyz_names_the_database_when_it_is_down(client, monkeypatch):
    def broken():
        raise OperationalError("connection refused")

    monkeypatch.setitem(health.READINESS_CHECKS, "database", broken)
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["failing"] == ["database"]
    assert "connection refused" in body["checks"]["database"]["error"]


@pytest.mark.django_db
def test_readyz_names_the_broker_when_it_is_down(client, settings, tmp_path):
    if settings.REDIS_URL:
        settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    else:
        missing = tmp_path / "missing"
        settings.CELERY_BROKER_TRANSPORT_OPTIONS = {
            "data_folder_in": str(missing),
            "control_folder": str(missing),
        }
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["failing"] == ["broker"]
