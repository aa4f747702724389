"""Gunicorn settings for the ``web`` process; every value can be set from the environment."""

import gc
import os

bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY", "3"))
threads = int(os.environ.get("WEB_THREADS", "1"))
timeout = int(os.environ.get("WEB_TIMEOUT", "30"))
graceful_timeout = 20
keepalive = 5
# Recycle workers now and then so a slow leak cannot grow without bound.
max_requests = int(os.environ.get("WEB_MAX_REQUESTS", "5000"))
max_requests_jitter = 500
accesslog = "-"
errorlog = "-"
# Access and error lines as JSON through the service's formatter (time, level, method, path,
# status, duration_ms, request_id): a class, because access_log_format is a string template.
logger_class = "core.logs.GunicornLogger"
# Trust X-Forwarded-* from the local proxy only (a PaaS router sets FORWARDED_ALLOW_IPS).
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")


def post_worker_init(worker):
    """Move everything loaded so far (Django, the URLconf, DRF, the models) out of the garbage
    collector's reach: a full collection then scans only what requests created since, instead
    of pausing a worker every few thousand requests (a p99 spike under load; docs/benchmarks.md,
    Optimisations kept)."""
    gc.collect()
    gc.freeze()
