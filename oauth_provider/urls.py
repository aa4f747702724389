"""OAuth endpoints under /api/oauth/<platform>/ (the views receive ``platform``).

``site_urlpatterns`` is mounted at the site root by ``config/urls.py``: the RFC 8414 metadata
document, plus the same endpoints for the default platform inside django-oauth-toolkit's
``oauth2_provider`` namespace, because DOT's metadata view finds the endpoints it advertises with
``reverse("oauth2_provider:authorize")`` and friends, which cannot fill in a platform. Those
aliases sit after the platform routes and so only ever serve ``reverse()``.
"""

from django.conf import settings
from django.urls import include, path
from oauth2_provider.views import OAuthServerMetadataView

from . import views

app_name = "oauth_provider"

urlpatterns = [
    path("authorize", views.AuthorizeView.as_view(), name="authorize"),
    path("token", views.TokenView.as_view(), name="token"),
    path("revoke", views.RevokeApi.as_view(), name="revoke"),
    path("revoke_token", views.RevokeTokenView.as_view(), name="revoke-token"),
]

_default = settings.CONNECTOR_PLATFORMS[0]
_dot_namespace = [
    path(
        ".well-known/oauth-authorization-server",
        OAuthServerMetadataView.as_view(),
        name="oauth-server-metadata",
    ),
    *(
        path(
            f"api/oauth/{_default}/{route.pattern}",
            route.callback,
            {"platform": _default},
            name=route.name,
        )
        for route in urlpatterns
        if route.name in {"authorize", "token", "revoke-token"}
    ),
]

site_urlpatterns = [path("", include((_dot_namespace, "oauth2_provider")))]
