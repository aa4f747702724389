"""URL map. /healthz and /readyz are answered by core.health.HealthCheckMiddleware.

The platform slug (``zapier``, ...) is a path segment matched against CONNECTOR_PLATFORMS.
"""

from django.contrib import admin
from django.urls import include, path, re_path, register_converter

from accounts import views as accounts_views
from config.converters import PlatformConverter
from connector_api.apis.docs import DocsPage, SchemaApi
from core import errors
from oauth_provider.urls import site_urlpatterns as oauth_site_urlpatterns
from portal.views.requests import home

register_converter(PlatformConverter, "platform")

admin.site.site_header = "Review requests: staff"
admin.site.site_title = "Review requests"
# The index links to the staff dashboard (activity/admin.py) and the CSV import (reviews/admin/).
admin.site.index_template = "admin/backoffice_index.html"

urlpatterns = [
    path("api/oauth/<platform:platform>/", include("oauth_provider.urls")),
    path("api/<platform:platform>/", include("connector_api.urls")),
    # The admin's login page, behind the owners' login throttle (accounts/throttle.py).
    path("admin/login/", accounts_views.admin_login),
    path("admin/", admin.site.urls),
    path("accounts/", include("accounts.urls")),
    path("", home, name="home"),
    # Review pages (/r/<token>/), unsubscribe, provider webhooks (/webhooks/...).
    path("", include("reviews.urls")),
    # RFC 8414 metadata at /.well-known/oauth-authorization-server (and DOT's reverse() names).
    path("", include(oauth_site_urlpatterns)),
    # OpenAPI 3 schema and its docs page (connector_api/openapi.py).
    path("api/schema/", SchemaApi.as_view(), name="api-schema"),
    path("api/docs/", DocsPage.as_view(), name="api-docs"),
    # The owner portal (its dashboard is the front page of a logged-in owner).
    path("portal/", include("portal.urls")),
    # Last: any other /api/ path is a JSON 404 (DEBUG or not), counted by the rate limiter.
    re_path(r"^api/", errors.api_not_found),
]

# Under /api/ these answer the JSON error shape; elsewhere Django's pages (templates/4xx, 500).
handler400 = errors.bad_request
handler403 = errors.permission_denied
handler404 = errors.page_not_found
handler500 = errors.server_error
