from django.apps import AppConfig


class ActivityConfig(AppConfig):
    name = "activity"
    verbose_name = "Activity"

    def ready(self) -> None:
        from . import receivers  # noqa: F401  (connects accounts' default_location_changing)
