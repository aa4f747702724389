"""The front page (a logged-in user's dashboard) and one review request's page."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from accounts.access import can_write
from activity import owner_dashboard
from core.pagination import capped_count, keyset_page
from reviews import services
from reviews.models import BusinessSettings, ReviewRequest

from .. import selectors
from ..forms import RequestFilterForm
from ..pages import OwnerRequest, location_choice, owner_page, require_write

PAGE_SIZE = 25
# Counted up to this many, then shown as "1,000+": counting a million rows is no use to anyone.
COUNT_CAP = 1000


@never_cache
def home(request: HttpRequest) -> HttpResponse:
    """The front page: a logged-in user's dashboard, else what the service is and a login."""
    if request.user.is_authenticated:
        return dashboard(request)
    return render(request, "home.html")


@owner_page
@require_http_methods(["GET", "HEAD"])
def dashboard(request: OwnerRequest) -> HttpResponse:
    """The review requests of the locations the user reaches, or of the one chosen (newest
    first, filtered, in keyset pages: ``?after=`` / ``?before=`` an opaque cursor) and the
    funnel."""
    access = request.access
    choice = location_choice(request)
    form = RequestFilterForm(request.GET)
    filters = form.values()
    requests = selectors.review_requests_list(
        access=access,
        location_id=choice.chosen_id,
        status=filters["status"],
        search=filters["q"],
    )
    page = keyset_page(
        requests,
        size=PAGE_SIZE,
        after=request.GET.get("after", ""),
        before=request.GET.get("before", ""),
    )
    total, more = capped_count(requests, cap=COUNT_CAP)
    rows = [(item, selectors.channels_of(item)) for item in page.object_list]
    # What the switcher keeps when another location is chosen (a new location: its first page).
    keep = [(name, filters[name]) for name in ("q", "status", "period") if filters[name]]
    label, days = selectors.PERIODS[filters["period"]]
    # The numbers of the location chosen, else of every location the user reaches (None: the
    # whole account, the owner's "All locations").
    counted = (
        [choice.chosen_id]
        if choice.chosen_id is not None
        else (None if access.location_ids is None else sorted(access.location_ids))
    )
    return render(
        request,
        "portal/dashboard.html",
        {
            "section": "dashboard",
            "switcher": choice,
            "keep": keep,
            "form": form,
            "filters": filters,
            "filtered": bool(filters["q"] or filters["status"]),
            "page": page,
            "total": total,
            "total_capped": more,
            "rows": rows,
            # Each request's location named in a column: with "All locations" shown and chosen
            # (the user reaches several). Names read from the cached settings (no query).
            "location_column": choice.shown and choice.chosen is None,
            "funnel": owner_dashboard.funnel(owner=access.owner, days=days, location_ids=counted),
            "feedback_count": selectors.feedback_count(
                access=access, days=days, location_id=choice.chosen_id
            ),
            "activity": owner_dashboard.activity(
                owner=access.owner, days=days, location_ids=counted
            ),
            "period_label": label,
            "periods": [(key, text) for key, (text, _) in selectors.PERIODS.items()],
        },
    )


def _owned_request(request: OwnerRequest, pk: uuid.UUID) -> ReviewRequest:
    """A request of the account at a location the user reaches, or 404: another account's
    id, or another location's, is indistinguishable from no id."""
    return get_object_or_404(
        ReviewRequest.objects.select_related("contact").filter(
            selectors.at_locations(request.access)
        ),
        pk=pk,
        owner=request.access.owner,
    )


@owner_page
@require_http_methods(["GET", "HEAD"])
def detail(request: OwnerRequest, pk: uuid.UUID) -> HttpResponse:
    review_request = _owned_request(request, pk)
    review_request.owner = request.access.owner
    messages = list(review_request.messages.order_by("step"))
    locations = BusinessSettings.for_owner(review_request.owner).locations
    return render(
        request,
        "portal/request_detail.html",
        {
            "section": "dashboard",
            "review_request": review_request,
            "contact": review_request.contact,
            "messages_sent": messages,
            "sending_hours": selectors.first_message_hours(
                review_request=review_request, messages=messages
            ),
            "timeline": selectors.review_request_timeline(review_request=review_request),
            "can_write": can_write(request.access),
            # Named when the account has several locations.
            "location_name": next(
                (
                    location.name
                    for location in locations
                    if location.id == review_request.location_id
                    or (review_request.location_id is None and location.is_default)
                ),
                "",
            )
            if len(locations) > 1
            else "",
        },
    )


@owner_page
@require_http_methods(["GET", "HEAD", "POST"])
def cancel(request: OwnerRequest, pk: uuid.UUID) -> HttpResponse:
    """GET asks for confirmation; POST stops the request (unsent messages are cancelled).
    Not for a viewer (403)."""
    require_write(request)
    review_request = _owned_request(request, pk)
    if request.method == "POST":
        if review_request.is_active:
            services.review_request_cancel(
                review_request=review_request, detail="cancelled by the business in the portal"
            )
            messages.success(
                request,
                f"Cancelled: {review_request.contact.display_name} will get no more messages "
                "for this request.",
            )
        else:
            messages.info(request, "This request had already ended; nothing changed.")
        return redirect("portal:request", pk=review_request.pk)
    return render(
        request,
        "portal/request_cancel.html",
        {"section": "dashboard", "review_request": review_request},
    )
