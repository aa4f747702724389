"""Connected apps: the OAuth clients authorised in the account (the owner sees everybody's, with
who connected each; a member, their own), and disconnecting one."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from oauth_provider import services as oauth_services
from oauth_provider.models import Connection

from .. import selectors
from ..pages import OwnerRequest, owner_page


@owner_page
@require_http_methods(["GET", "HEAD"])
def index(request: OwnerRequest) -> HttpResponse:
    return render(
        request,
        "portal/apps.html",
        {
            "section": "apps",
            "apps": selectors.connected_apps(access=request.access),
        },
    )


# A viewer may disconnect their own apps: that changes nothing of the account's.
@owner_page(viewer_posts=True)
@require_http_methods(["GET", "HEAD", "POST"])
def disconnect(request: OwnerRequest, pk: uuid.UUID) -> HttpResponse:
    """GET asks for confirmation; POST revokes every token of this connection at once (the
    app's next API call gets 401). A connection the user does not see (another account's;
    another member's, for a member) is a 404."""
    connection = get_object_or_404(
        Connection.objects.select_related("application").filter(
            selectors.connections_visible(request.access)
        ),
        pk=pk,
    )
    name = connection.application.name
    if request.method == "POST":
        if oauth_services.connection_revoke(connection_id=connection.pk):
            messages.success(request, f"Disconnected {name}: it can no longer use your account.")
        else:
            messages.info(request, f"{name} was already disconnected.")
        return redirect("portal:apps")
    return render(
        request,
        "portal/app_disconnect.html",
        {"section": "apps", "connection": connection, "name": name},
    )
