"""Webhooks: the account's REST hook subscriptions (made by its apps through the API) and the
latest deliveries, so a Zap that stopped receiving events can be explained. The owner's pages
only."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from events.models import WebhookSubscription
from events.services import webhook_subscription_delete

from .. import selectors
from ..pages import OwnerRequest, owner_page


@owner_page(account=True)
@require_http_methods(["GET", "HEAD"])
def index(request: OwnerRequest) -> HttpResponse:
    return render(
        request,
        "portal/webhooks.html",
        {
            "section": "webhooks",
            "subscriptions": selectors.webhook_subscriptions(owner=request.access.owner),
            "deliveries": selectors.webhook_deliveries_recent(owner=request.access.owner),
            "disable_after_days": f"{settings.WEBHOOK_DISABLE_AFTER_DAYS:g}",
        },
    )


@owner_page(account=True)
@require_http_methods(["GET", "HEAD", "POST"])
def remove(request: OwnerRequest, pk: uuid.UUID) -> HttpResponse:
    """GET asks for confirmation; POST deletes the subscription (an app that forgot to
    unsubscribe). Another owner's subscription is a 404."""
    hook = get_object_or_404(WebhookSubscription, pk=pk, owner=request.access.owner)
    if request.method == "POST":
        if webhook_subscription_delete(owner=request.access.owner, subscription_id=hook.pk):
            messages.success(request, f"Removed: nothing more is sent to {hook.target_url}.")
        return redirect("portal:webhooks")
    return render(request, "portal/webhook_remove.html", {"section": "webhooks", "hook": hook})
