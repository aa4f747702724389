"""The real URLconf plus a write-scoped endpoint (no real write endpoint lives on this branch)."""

from django.urls import path

from config.urls import urlpatterns as site_urlpatterns
from tests.support.error_urls import WriteScopeView

urlpatterns = [path("api/test/write", WriteScopeView.as_view()), *site_urlpatterns]
