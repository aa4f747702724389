"""Private feedback: what contacts wrote on the review page, newest first."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from core.pagination import keyset_page
from reviews.models import BusinessSettings

from .. import selectors
from ..pages import OwnerRequest, location_choice, owner_page

PAGE_SIZE = 25


@owner_page
@require_http_methods(["GET", "HEAD"])
def index(request: OwnerRequest) -> HttpResponse:
    """Every private feedback on the requests of the locations the user reaches (or of the one
    chosen), in keyset pages (``?after=`` / ``?before=`` an opaque cursor), each linking to its
    request."""
    choice = location_choice(request)
    page = keyset_page(
        selectors.feedback_list(access=request.access, location_id=choice.chosen_id),
        size=PAGE_SIZE,
        after=request.GET.get("after", ""),
        before=request.GET.get("before", ""),
    )
    return render(
        request,
        "portal/feedback.html",
        {
            "section": "feedback",
            "switcher": choice,
            "page": page,
            # Who else reads it: the owner's members (those with access to its location), or,
            # for a member, the owner and the others of their locations.
            "shared": selectors.feedback_shared(access=request.access),
            # The owner is e-mailed; a member reads it here.
            "notify": settings.FEEDBACK_NOTIFY_OWNER
            and not request.user.is_member
            and BusinessSettings.for_owner(request.access.owner).notify_feedback,
        },
    )
