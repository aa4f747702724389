from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Core"

    def ready(self) -> None:
        from django.conf import settings

        from . import metrics, request_id

        request_id.connect_task_signals()
        metrics.connect_task_signals()
        if settings.SENTRY_DSN:
            from .sentry import sentry_init

            sentry_init()
