"""``/api/docs/`` (connector_api.apis.docs): Swagger UI for people, loading only local assets under
a self-only CSP."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders

from connector_api.apis.docs import DOCS_CSP


@pytest.mark.django_db
def test_the_docs_page_loads_only_local_assets_under_a_self_only_csp(client):
    page = client.get("/api/docs/")
    assert page.status_code == 200
    assert page["Content-Type"].startswith("text/html")
    assert page["Content-Security-Policy"] == DOCS_CSP
    html = page.content.decode()
    assert "<script>" not in html  # no inline script: the CSP would block it
    urls = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert urls and all(url.startswith("/") for url in urls), urls
    for url in urls:
        if url.startswith("/static/"):
            assert finders.find(url.removeprefix("/static/")), url
    script = client.get("/api/docs/?script=")
    assert script.status_code == 200
    assert script["Content-Type"].startswith("application/javascript")
    assert "/api/schema/" in script.content.decode()
