"""Webhooks: the owner's REST hook subscriptions (made by their apps through the API) and the
latest deliveries, so a Zap that stopped receiving events can be explained."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from .. import selectors
from ..pages import owner_page


@owner_page
@require_http_methods(["GET", "HEAD"])
def index(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "portal/webhooks.html",
        {
            "section": "webhooks",
            "subscriptions": selectors.webhook_subscriptions(owner=request.user),
            "deliveries": selectors.webhook_deliveries_recent(owner=request.user),
            "disable_after_days": f"{settings.WEBHOOK_DISABLE_AFTER_DAYS:g}",
        },
    )
