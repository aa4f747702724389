from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"
    verbose_name = "Reviews"

    def ready(self) -> None:
        from . import receivers  # noqa: F401  (connects anymail's tracking/inbound signals)
