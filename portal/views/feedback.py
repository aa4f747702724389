"""Private feedback: what contacts wrote on the review page, newest first."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from core.pagination import keyset_page
from reviews.models import BusinessSettings

from .. import selectors
from ..pages import OwnerRequest, owner_page

PAGE_SIZE = 25


@owner_page
@require_http_methods(["GET", "HEAD"])
def index(request: OwnerRequest) -> HttpResponse:
    """Every private feedback on the owner's requests, in keyset pages (``?after=`` /
    ``?before=`` an opaque cursor), each linking to its request."""
    page = keyset_page(
        selectors.feedback_list(owner=request.user),
        size=PAGE_SIZE,
        after=request.GET.get("after", ""),
        before=request.GET.get("before", ""),
    )
    return render(
        request,
        "portal/feedback.html",
        {
            "section": "feedback",
            "page": page,
            "notify": settings.FEEDBACK_NOTIFY_OWNER
            and BusinessSettings.for_owner(request.user).notify_feedback,
        },
    )
