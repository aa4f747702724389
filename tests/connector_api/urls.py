"""The real URLconf plus views that crash, for the 500 tests (under /api/ and on a page)."""

from django.urls import path

from config import urls as site


def boom(request, *args, **kwargs):
    raise RuntimeError("secret internals: password=hunter2")


urlpatterns = [
    path("api/zapier/boom", boom),
    path("boom", boom),
    *site.urlpatterns,
]

handler400 = site.handler400
handler403 = site.handler403
handler404 = site.handler404
handler500 = site.handler500
