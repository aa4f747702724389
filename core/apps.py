from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Core"

    def ready(self) -> None:
        from django.conf import settings
        from django.db.backends.signals import connection_created

        from . import db, metrics, request_id

        connection_created.connect(db.prepared_statements_forget, dispatch_uid="core.db.prepared")

        request_id.connect_task_signals()
        metrics.connect_task_signals()
        if settings.SENTRY_DSN:
            from .sentry import sentry_init

            sentry_init()
