"""Reading and cancelling review requests: ``GET /api/<platform>/review-requests`` (the list a
platform polls), ``GET .../review-requests/<id>`` (one request and its timeline) and
``POST .../review-requests/<id>/cancel``.

Every request is looked up within what the token's user reaches (``connector_api.lookups``):
another account's id, or one at a location a member does not reach, is a 404, exactly as an id
that does not exist. The items are ``reviews.representations.review_request_object``,
the one shape of a review request in the API and the events; the rules (what a timeline holds,
what a cancel does) are ``reviews.selectors`` and ``reviews.services``'.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from connector_api.lookups import api_access, location_filter, reachable_or_404, require_write
from connector_api.openapi import REVIEW_REQUEST_EXAMPLE, ReviewRequestSerializer
from connector_api.pagination import PageQuerySerializer, page
from connector_api.permissions import AuthenticatedRequest, TokenHasRequiredScopes
from core.errors import ApiError
from core.openapi import Error, error_responses
from core.ratelimit import RateLimitedView
from core.times import iso_utc
from reviews import selectors
from reviews.models import ReviewRequest
from reviews.representations import account_default_location, review_request_object
from reviews.services import CancelRefused, review_request_cancel

NOT_FOUND = "No review request with this id."
REQUEST_ID = OpenApiParameter(
    "request_id",
    str,
    OpenApiParameter.PATH,
    description="The review request's `id` (a UUID); another account's, or one at a location "
    "the user does not reach, is a 404.",
)


def owned_request(request: AuthenticatedRequest, request_id: str) -> ReviewRequest:
    """The account's request ``request_id`` at a location the token's user reaches, with its
    contact; 404 otherwise (another account's or location's request included: its existence
    is not revealed)."""
    return reachable_or_404(
        ReviewRequest.objects.select_related("contact", "location"),
        access=api_access(request),
        pk=request_id,
        not_found=NOT_FOUND,
    )


class ReviewRequestListApi(RateLimitedView, APIView):
    """The review requests the token's user reaches, newest first, a page at a time."""

    permission_classes = [TokenHasRequiredScopes]
    required_scopes = ["read"]

    class QuerySerializer(PageQuerySerializer):
        status = serializers.ChoiceField(
            choices=ReviewRequest.Status.values,
            required=False,
            help_text="Only requests in this status.",
        )
        since = serializers.DateTimeField(
            required=False,
            default=None,
            help_text="Only requests changed (any status change, or their schedule) at or "
            "after this ISO 8601 time; without an offset it is read as UTC.",
        )
        location_id = serializers.CharField(
            required=False,
            default="",
            help_text="Only requests at this location (an `id` from GET /locations).",
        )

    @extend_schema_serializer(component_name="ReviewRequestPage")
    class OutputSerializer(serializers.Serializer[dict[str, Any]]):
        results = ReviewRequestSerializer(many=True)
        next = serializers.CharField(
            allow_null=True, help_text="The cursor of the next page; `null` on the last one."
        )

    @extend_schema(
        operation_id="review_requests_list",
        summary="List review requests",
        description="The review requests the token's user reaches (every location for the "
        "owner, their own for a member), newest first (by creation), `limit` at a time; pass "
        "`next` back as `cursor` for the next page. `status`, `since` (changed at or after) "
        "and `location_id` filter. The list an automation platform polls.",
        tags=["Review requests"],
        parameters=[QuerySerializer],
        responses={200: OutputSerializer, **error_responses(400, 401, 403)},
        examples=[
            OpenApiExample(
                "A page",
                value={"results": [REVIEW_REQUEST_EXAMPLE.value], "next": "WyIyMDI2LTExLTIx"},
                response_only=True,
            )
        ],
    )
    def get(self, request: AuthenticatedRequest, platform: str) -> Response:
        # A plain dict: a blank parameter (`status=`) is a bad value, not an absent one.
        query = self.QuerySerializer(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        params = query.validated_data
        access = api_access(request)
        requests = selectors.review_requests_of(
            access=access,
            status=params.get("status", ""),
            changed_since=params["since"],
            location_id=location_filter(access, params["location_id"]),
        )
        items, next_cursor = page(requests, limit=params["limit"], cursor=params["cursor"])
        default = account_default_location(access.owner.pk)
        results = [review_request_object(r, default_location=default) for r in items]
        return Response({"results": results, "next": next_cursor})


class TimelineEventSerializer(serializers.Serializer[dict[str, Any]]):
    at = serializers.CharField(help_text="ISO 8601 UTC.")
    kind = serializers.CharField(
        help_text="`added`, `sent`, `delivered`, `unknown`, `failed`, `cancelled`, `clicked`, "
        "`ignored` (a link fetched by a machine, not counted), `feedback`, `opt-out`, "
        "`opt-in`, `ended`."
    )
    title = serializers.CharField()
    detail = serializers.CharField(allow_blank=True)


@extend_schema_serializer(component_name="ReviewRequestDetail")
class ReviewRequestDetailSerializer(ReviewRequestSerializer):
    timeline = TimelineEventSerializer(many=True, help_text="What happened, oldest first.")


def detail_body(review_request: ReviewRequest) -> dict[str, Any]:
    timeline = selectors.review_request_timeline(review_request=review_request)
    return {
        **review_request_object(review_request),
        "timeline": [
            {"at": iso_utc(e.at), "kind": e.kind, "title": e.title, "detail": e.detail}
            for e in timeline
        ],
    }


class ReviewRequestDetailApi(RateLimitedView, APIView):
    """One review request and its timeline."""

    permission_classes = [TokenHasRequiredScopes]
    required_scopes = ["read"]

    @extend_schema(
        operation_id="review_requests_retrieve",
        summary="One review request and its timeline",
        description="The review request and what happened to it, oldest first: its messages "
        "sent, delivered or failed, clicks, private feedback, opt-outs and its end. Another "
        "account's id, or one at a location the user does not reach, is a 404.",
        tags=["Review requests"],
        parameters=[REQUEST_ID],
        responses={200: ReviewRequestDetailSerializer, **error_responses(401, 403, 404)},
    )
    def get(self, request: AuthenticatedRequest, platform: str, request_id: str) -> Response:
        return Response(detail_body(owned_request(request, request_id)))


class ReviewRequestCancelApi(RateLimitedView, APIView):
    """Stop a review request: nothing more is sent."""

    permission_classes = [TokenHasRequiredScopes]
    required_scopes = ["write"]

    @extend_schema(
        operation_id="review_requests_cancel",
        summary="Cancel a review request",
        description="No body. Ends an active request as `cancelled`: its unsent messages "
        "(the first one, if it is still waiting, and every follow-up) are never sent; a "
        "message already handed to the SMS or e-mail provider cannot be called back. Answers "
        "the updated request. A request that already ended (clicked, completed, failed, opted "
        "out or cancelled) is a 409 `already_ended` saying how; nothing changes.",
        tags=["Review requests"],
        parameters=[REQUEST_ID],
        request=None,
        responses={
            200: ReviewRequestSerializer,
            **error_responses(
                401,
                403,
                404,
                _409=OpenApiResponse(
                    Error,
                    description="`already_ended`: the request already ended; the description "
                    "says how and when.",
                ),
            ),
        },
        examples=[REVIEW_REQUEST_EXAMPLE],
    )
    def post(self, request: AuthenticatedRequest, platform: str, request_id: str) -> Response:
        found = owned_request(request, request_id)
        require_write(request)
        try:
            cancelled = review_request_cancel(
                review_request=found, detail="through the API", refuse_ended=True
            )
        except CancelRefused as exc:
            raise ApiError(409, "already_ended", str(exc)) from None
        return Response(review_request_object(cancelled, contact=found.contact))
