"""The front page (a logged-in owner's dashboard) and one review request's page."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from activity import owner_dashboard
from core.pagination import capped_count, keyset_page
from reviews import services
from reviews.models import ReviewRequest

from .. import selectors
from ..forms import RequestFilterForm
from ..pages import OwnerRequest, owner_page

PAGE_SIZE = 25
# Counted up to this many, then shown as "1,000+": counting a million rows is no use to anyone.
COUNT_CAP = 1000


@never_cache
def home(request: HttpRequest) -> HttpResponse:
    """The front page: a logged-in owner's dashboard, else what the service is and a login."""
    if request.user.is_authenticated:
        return dashboard(request)
    return render(request, "home.html")


@owner_page
@require_http_methods(["GET", "HEAD"])
def dashboard(request: OwnerRequest) -> HttpResponse:
    """The owner's review requests (newest first, filtered, in keyset pages: ``?after=`` /
    ``?before=`` an opaque cursor) and the funnel."""
    form = RequestFilterForm(request.GET)
    filters = form.values()
    requests = selectors.review_requests_list(
        owner=request.user, status=filters["status"], search=filters["q"]
    )
    page = keyset_page(
        requests,
        size=PAGE_SIZE,
        after=request.GET.get("after", ""),
        before=request.GET.get("before", ""),
    )
    total, more = capped_count(requests, cap=COUNT_CAP)
    rows = [(item, selectors.channels_of(item)) for item in page.object_list]
    label, days = selectors.PERIODS[filters["period"]]
    return render(
        request,
        "portal/dashboard.html",
        {
            "section": "dashboard",
            "form": form,
            "filters": filters,
            "filtered": bool(filters["q"] or filters["status"]),
            "page": page,
            "total": total,
            "total_capped": more,
            "rows": rows,
            "funnel": owner_dashboard.funnel(owner=request.user, days=days),
            "feedback_count": selectors.feedback_count(owner=request.user, days=days),
            "activity": owner_dashboard.activity(owner=request.user, days=days),
            "period_label": label,
            "periods": [(key, text) for key, (text, _) in selectors.PERIODS.items()],
        },
    )


def _owned_request(request: OwnerRequest, pk: uuid.UUID) -> ReviewRequest:
    """The owner's request, or 404: another owner's id is indistinguishable from no id."""
    return get_object_or_404(
        ReviewRequest.objects.select_related("contact"), pk=pk, owner=request.user
    )


@owner_page
@require_http_methods(["GET", "HEAD"])
def detail(request: OwnerRequest, pk: uuid.UUID) -> HttpResponse:
    review_request = _owned_request(request, pk)
    review_request.owner = request.user
    messages = list(review_request.messages.order_by("step"))
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
        },
    )


@owner_page
@require_http_methods(["GET", "HEAD", "POST"])
def cancel(request: OwnerRequest, pk: uuid.UUID) -> HttpResponse:
    """GET asks for confirmation; POST stops the request (unsent messages are cancelled)."""
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
