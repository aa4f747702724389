"""The connection itself: who the token belongs to (``/me``) and whether it works (``/status``)."""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict
from uuid import UUID

from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.access import locations_reached
from accounts.models import Role
from connector_api.lookups import api_access, is_owner_token
from connector_api.openapi import StatusError
from connector_api.permissions import AuthenticatedRequest, TokenHasRequiredScopes
from core.openapi import error_responses
from core.ratelimit import RateLimitedView
from oauth_provider.models import Connection


class MeBody(TypedDict):
    """The body of ``GET /me`` before rendering (``MeApi.OutputSerializer``)."""

    id: UUID
    email: str
    business_name: str
    role: str


class MeApi(RateLimitedView, APIView):
    """``GET /api/<platform>/me``: the user the token belongs to, with the account's business
    name and their role (the platform's connection test)."""

    permission_classes = [TokenHasRequiredScopes]
    required_scopes = ["read"]

    @extend_schema_serializer(component_name="User")
    class OutputSerializer(serializers.Serializer[MeBody]):
        id = serializers.UUIDField()
        email = serializers.EmailField()
        business_name = serializers.CharField(help_text="The account's business name.")
        role = serializers.ChoiceField(
            choices=Role.values,
            help_text="`owner` (everything), `manager` (their locations) or `viewer` (their "
            "locations, read only).",
        )

    @extend_schema(
        operation_id="me",
        summary="The connected user",
        description="The user the token belongs to (the account's owner or one of its "
        "members), the account's business name and the user's role; the platform's "
        "connection test.",
        tags=["Connection"],
        responses={200: OutputSerializer, **error_responses(401, 403)},
    )
    def get(self, request: AuthenticatedRequest, platform: str) -> Response:
        user = request.user
        if is_owner_token(request):  # no query: the owner is the account
            business_name, role = user.business_name, str(Role.OWNER)
        else:
            access = api_access(request)
            business_name, role = access.owner.business_name, str(access.role)
        body: MeBody = {
            "id": user.pk,
            "email": user.email,
            "business_name": business_name,
            "role": role,
        }
        return Response(self.OutputSerializer(body).data)


class LocationsApi(RateLimitedView, APIView):
    """``GET /api/<platform>/locations``: the locations the token's user may act on (Zapier's
    hidden ``locations`` trigger feeds the ``location_id`` dropdowns from it)."""

    permission_classes = [TokenHasRequiredScopes]
    required_scopes = ["read"]

    @extend_schema_serializer(component_name="Location")
    class LocationSerializer(serializers.Serializer[dict[str, str]]):
        id = serializers.UUIDField()
        name = serializers.CharField()
        time_zone = serializers.CharField(help_text="IANA time zone, e.g. America/New_York.")

    @extend_schema(
        operation_id="locations_list",
        summary="The user's locations",
        description="The locations the token's user may act on, in the account's order (the "
        "first of the account is its default location): every location for the owner, their "
        "own for a member. Pass an `id` as `location_id` elsewhere.",
        tags=["Connection"],
        responses={
            200: inline_serializer(
                "LocationPage",
                {
                    "results": LocationSerializer(many=True),
                    "next": serializers.CharField(
                        allow_null=True, help_text="Always `null`: one page."
                    ),
                },
            ),
            **error_responses(401, 403),
        },
    )
    def get(self, request: AuthenticatedRequest, platform: str) -> Response:
        locations = locations_reached(api_access(request))
        results = [
            {"id": str(loc.pk), "name": loc.name, "time_zone": loc.time_zone} for loc in locations
        ]
        return Response({"results": results, "next": None})


class ConnectionStatus(TypedDict):
    """The body of ``GET /status`` before rendering (``StatusApi.OutputSerializer``)."""

    active: bool
    auth_type: str
    user_id: UUID
    scopes: list[str]
    expires_at: datetime
    created_at: datetime
    last_used_at: datetime | None


class StatusApi(RateLimitedView, APIView):
    """``GET /api/<platform>/status``: the presented token is valid and active.

    Any valid token may ask (no scope needed). An invalid, expired or revoked token is a 401 with
    ``active: false``: a 200 would make a platform's connection test pass.
    """

    @extend_schema_serializer(component_name="ConnectionStatus")
    class OutputSerializer(serializers.Serializer[ConnectionStatus]):
        active = serializers.BooleanField()
        auth_type = serializers.CharField()
        user_id = serializers.UUIDField()
        scopes = serializers.ListField(child=serializers.CharField())
        expires_at = serializers.DateTimeField()
        created_at = serializers.DateTimeField()
        last_used_at = serializers.DateTimeField(allow_null=True)

    @extend_schema(
        operation_id="status",
        summary="Whether the token is valid and active",
        description="Any valid token may ask (no scope needed).",
        tags=["Connection"],
        responses={
            200: OutputSerializer,
            **error_responses(
                _401=OpenApiResponse(
                    StatusError,
                    description="`unauthorized` with `active: false`: the token is missing, "
                    "invalid, expired or revoked.",
                )
            ),
        },
    )
    def get(self, request: AuthenticatedRequest, platform: str) -> Response:
        token = request.auth
        connection = Connection.objects.for_access_token(token)
        status: ConnectionStatus = {
            "active": True,
            "auth_type": "oauth",
            "user_id": request.user.pk,
            "scopes": token.scope.split(),
            "expires_at": token.expires,
            # When the owner connected, not when this (rotated) token was minted.
            "created_at": connection.created_at if connection else token.created,
            "last_used_at": connection.last_used_at if connection else None,
        }
        return Response(self.OutputSerializer(status).data)

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        if response.status_code == 401:
            response.data = {"active": False, **response.data}
        return response
