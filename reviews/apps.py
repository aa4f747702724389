from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"
    verbose_name = "Reviews"

    def ready(self) -> None:
        from core.metrics import register_scrape_collector

        from . import receivers  # noqa: F401  (connects anymail's tracking/inbound signals)
        from .metrics import DeliveryBacklogCollector

        register_scrape_collector(DeliveryBacklogCollector())
