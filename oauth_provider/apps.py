from django.apps import AppConfig


class OAuthProviderConfig(AppConfig):
    name = "oauth_provider"
    verbose_name = "OAuth provider"
