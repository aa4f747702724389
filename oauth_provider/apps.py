from django.apps import AppConfig


class OAuthProviderConfig(AppConfig):
    name = "oauth_provider"
    verbose_name = "OAuth provider"

    def ready(self) -> None:
        from . import receivers  # noqa: F401  (token-cache invalidation on token/user changes)
