"""Prometheus metrics: what the processes count, and ``/metrics`` to scrape them.

``/metrics`` is answered by ``MetricsMiddleware`` (placed right after the health middleware, so
that Prometheus can scrape by IP over plain HTTP, before host checks and HTTPS redirects) and
only to ``Authorization: Bearer <METRICS_TOKEN>``: without the setting the path does not exist
(404); a missing or wrong token is a 401.

Counters and histograms live in each process. With several processes (gunicorn workers, Celery
worker processes), set ``PROMETHEUS_MULTIPROC_DIR`` to a directory shared by every process of a
machine (emptied before they start): each process then writes its values there, and a scrape
of any web process sums them all, the worker's included (prometheus-client's multiprocess mode).

Apps register collectors computed at scrape time (``register_scrape_collector``): the reviews
app adds the dispatcher's lag and the due backlog, read from the database.
"""

from __future__ import annotations

import hmac
import os
import time
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.registry import Collector

METRICS_PATH = "/metrics"

HTTP_REQUESTS = Counter(
    "rr_http_requests", "HTTP requests answered, by view and status.", ["view", "method", "status"]
)
HTTP_LATENCY = Histogram(
    "rr_http_request_duration_seconds",
    "Time to answer an HTTP request, by view.",
    ["view"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
RATE_LIMITED = Counter(
    "rr_http_rate_limited", "Requests answered 429 by the API rate limiter, by view.", ["view"]
)
MESSAGES = Counter(
    "rr_messages",
    "Outcomes of provider calls: sent, failed (refused for good), retry (refused for now) or "
    "unknown (may have been sent), by channel and provider.",
    ["channel", "provider", "outcome"],
)
PROVIDER_LATENCY = Histogram(
    "rr_provider_call_duration_seconds",
    "Time of a provider call (one message), by channel and provider.",
    ["channel", "provider"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30),
)
TASKS = Counter("rr_celery_tasks", "Celery task runs by task and outcome.", ["task", "outcome"])
WEBHOOK_DELIVERIES = Counter(
    "rr_webhook_deliveries",
    "Webhook delivery attempts by outcome: delivered, retried, failed (gave up), removed (410), "
    "skipped (the outcome came after a redelivery or an unsubscribe).",
    ["outcome"],
)

_scrape_collectors: list[Collector] = []


def register_scrape_collector(collector: Collector) -> None:
    """A collector run at each scrape of /metrics (in the web process that answers it)."""
    _scrape_collectors.append(collector)


def render_metrics() -> bytes:
    """Every process's metrics (multiprocess mode) or this one's, then the scrape-time ones."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        processes = CollectorRegistry()
        multiprocess.MultiProcessCollector(processes)  # type: ignore[no-untyped-call]  # unannotated upstream
    else:
        processes = REGISTRY
    scraped = CollectorRegistry()
    for collector in _scrape_collectors:
        scraped.register(collector)
    return generate_latest(processes) + generate_latest(scraped)


def _authorized(request: HttpRequest) -> bool:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        token.strip().encode(), settings.METRICS_TOKEN.encode()
    )


def _view_label(request: HttpRequest) -> str:
    match = getattr(request, "resolver_match", None)
    if match is None:
        return "unmatched"
    return match.view_name or match.route or "unnamed"


class MetricsMiddleware:
    """Answers ``/metrics``; counts and times every other request by view and status."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if request.path == METRICS_PATH:
            return self.metrics(request)
        started = time.perf_counter()
        response = self.get_response(request)
        view = _view_label(request)
        HTTP_LATENCY.labels(view).observe(time.perf_counter() - started)
        HTTP_REQUESTS.labels(view, request.method, str(response.status_code)).inc()
        if response.status_code == 429:
            RATE_LIMITED.labels(view).inc()
        return response

    def metrics(self, request: HttpRequest) -> HttpResponse:
        if not settings.METRICS_TOKEN:
            return HttpResponse(status=404)
        if not _authorized(request):
            response = HttpResponse(status=401)
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
            return response
        return HttpResponse(render_metrics(), content_type=CONTENT_TYPE_LATEST)


# --- Celery task outcomes (connected by core.apps.CoreConfig.ready) ------------------------------


def _task_name(sender: object) -> str:
    return getattr(sender, "name", None) or str(sender)


def _task_succeeded(sender: object = None, **kwargs: object) -> None:
    TASKS.labels(_task_name(sender), "success").inc()


def _task_failed(sender: object = None, **kwargs: object) -> None:
    TASKS.labels(_task_name(sender), "failure").inc()


def _task_retried(sender: object = None, **kwargs: object) -> None:
    TASKS.labels(_task_name(sender), "retry").inc()


def connect_task_signals() -> None:
    from celery.signals import task_failure, task_retry, task_success

    task_success.connect(_task_succeeded, weak=False)
    task_failure.connect(_task_failed, weak=False)
    task_retry.connect(_task_retried, weak=False)
