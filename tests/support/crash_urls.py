"""The real URLconf plus views that crash, for the 500 tests (under /api/ and on a page), and
views that queue a task on a broker that refuses connections, for the 503 tests."""

from celery import current_app
from django.http import JsonResponse
from django.urls import path

from config import urls as site
from tests.support.processes import free_port


def boom(request, *args, **kwargs):
    raise RuntimeError("secret internals: password=hunter2")


def queue_task(request, *args, **kwargs):
    """Queue a task on a broker at a closed port (kombu raises its OperationalError; at once
    with no reconnection attempts, instead of after kombu's default ~6 s of them)."""
    url = f"redis://127.0.0.1:{free_port()}/0"
    with current_app.connection_for_write(url=url, transport_options={"max_retries": 0}) as broker:
        current_app.send_task("core.tasks.heartbeat", connection=broker, retry=False)
    return JsonResponse({"queued": True})


urlpatterns = [
    path("api/zapier/boom", boom),
    path("boom", boom),
    path("api/zapier/queue-task", queue_task),
    path("queue-task", queue_task),
    *site.urlpatterns,
]

handler400 = site.handler400
handler403 = site.handler403
handler404 = site.handler404
handler500 = site.handler500
