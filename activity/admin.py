"""The staff dashboard's page in the admin: ``/admin/reviews/reviewrequest/dashboard/``, URL name
``admin:reviews_dashboard``, under the review requests as it always was (bookmarks, the admin
index's link in ``templates/admin/backoffice_index.html``).

The page belongs to the review requests' admin, but ``reviews`` sits below this app and imports
nothing of it, so this module extends that admin from above, as ``reviews.admin.business`` does
accounts' ``User``: it registers ``ReviewRequest`` again with ``ReviewRequestDashboardAdmin``,
``reviews.admin.requests.ReviewRequestAdmin`` plus the page's URL (``get_urls``, where Django's
documentation puts a model admin's own views) and the change list's link to it. Importing
``ReviewRequestAdmin`` registers it first, whatever order the admin's autodiscovery imports the
apps' ``admin`` modules in. A URL of the admin site itself would have needed an ``AdminSite``
subclass in place of ``admin.site`` for this one page.
"""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path

from accounts.models import Location
from reviews.admin.base import business_owners
from reviews.admin.requests import ReviewRequestAdmin
from reviews.models import ReviewRequest

from . import dashboard


class ReviewRequestDashboardAdmin(ReviewRequestAdmin):
    """The review requests' admin with the staff dashboard: its page and a link to it above the
    change list."""

    change_list_template = "admin/activity/reviewrequest_change_list.html"

    def get_urls(self) -> list[URLPattern]:
        return [
            path(
                "dashboard/",
                self.admin_site.admin_view(self.dashboard_view),
                name="reviews_dashboard",
            ),
            *super().get_urls(),
        ]

    def dashboard_view(self, request: HttpRequest) -> HttpResponse:
        """Requests per day for 30 days (chart and table), click-through rate, failure
        reasons and opt-outs, for every business or one (``?owner=<id>``), and for one of its
        locations (``&location=<id>``; a location of another business, or without a
        business, is ignored)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        owners = business_owners()  # type: ignore[no-untyped-call]  # reviews' admin is not typed
        businesses = list(owners.only("pk", "email", "business_name"))
        chosen = request.GET.get("owner", "")
        owner = next((b for b in businesses if str(b.pk) == chosen), None)
        locations: list[Location] = []
        if owner is not None:
            locations = list(
                Location.objects.filter(account=owner)
                .order_by("position", "created_at")
                .only("pk", "name")
            )
        chosen_location = request.GET.get("location", "")
        location = next((loc for loc in locations if str(loc.pk) == chosen_location), None)
        data = dashboard.staff_dashboard(
            owner_id=owner.pk if owner else None, location_id=location.pk if location else None
        )
        return TemplateResponse(
            request,
            "admin/activity/dashboard.html",
            {
                **self.admin_site.each_context(request),
                "title": "Review requests: the last 30 days",
                "opts": self.opts,
                "businesses": businesses,
                "owner": owner,
                "locations": locations,
                "location": location,
                "data": data,
                "chart": data.chart(),
                "media": self.media,
            },
        )


admin.site.unregister(ReviewRequest)
admin.site.register(ReviewRequest, ReviewRequestDashboardAdmin)
