"""The service's URLs plus the benchmark baselines (never mounted in production)."""

from django.urls import path

from config.urls import urlpatterns as service_urlpatterns

from . import views

urlpatterns = [
    path("bench/l1", views.bare_json),
    path("bench/l2", views.raw_sql_write),
    *service_urlpatterns,
]
