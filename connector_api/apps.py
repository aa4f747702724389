from django.apps import AppConfig


class ConnectorApiConfig(AppConfig):
    name = "connector_api"
    verbose_name = "Connector API"

    def ready(self) -> None:
        # drf-spectacular finds extensions (our OAuth2 security scheme) by their being imported.
        from . import openapi  # noqa: F401
