"""Connector API under /api/<platform>/ (views are added by their modules).

Paths have no trailing slash, exactly as docs/api.md writes them: a slash-append
redirect would break Zapier, which refuses redirects to loopback hosts.
"""

from django.urls import URLPattern, path

from connector_api.apis.connection import LocationsApi, MeApi, StatusApi
from connector_api.apis.contacts import ContactLookupApi
from connector_api.apis.hooks import HookApi, HooksApi
from connector_api.apis.review_request_reads import (
    ReviewRequestCancelApi,
    ReviewRequestDetailApi,
    ReviewRequestListApi,
)
from connector_api.apis.review_requests import SendReviewRequestApi, SendReviewRequestFieldsApi

app_name = "connector_api"

urlpatterns: list[URLPattern] = [
    path("me", MeApi.as_view(), name="me"),
    path("status", StatusApi.as_view(), name="status"),
    path("locations", LocationsApi.as_view(), name="locations"),
    path("hooks", HooksApi.as_view(), name="hooks"),
    path("hooks/<str:hook_id>", HookApi.as_view(), name="hook"),
    path("send-review-request", SendReviewRequestApi.as_view(), name="send-review-request"),
    path(
        "send-review-request/fields",
        SendReviewRequestFieldsApi.as_view(),
        name="send-review-request-fields",
    ),
    path("review-requests", ReviewRequestListApi.as_view(), name="review-requests"),
    path(
        "review-requests/<str:request_id>",
        ReviewRequestDetailApi.as_view(),
        name="review-request",
    ),
    path(
        "review-requests/<str:request_id>/cancel",
        ReviewRequestCancelApi.as_view(),
        name="review-request-cancel",
    ),
    path("contacts", ContactLookupApi.as_view(), name="contacts"),
]
