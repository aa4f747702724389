"""The connection itself: who the token belongs to (``/me``) and whether it works (``/status``)."""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict
from uuid import UUID

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import User
from connector_api.openapi import StatusError
from connector_api.permissions import AuthenticatedRequest, TokenHasRequiredScopes
from core.openapi import error_responses
from core.ratelimit import RateLimitedView
from oauth_provider.models import Connection


class MeApi(RateLimitedView, APIView):
    """``GET /api/<platform>/me``: the owner the token acts for (the platform's connection test)."""

    permission_classes = [TokenHasRequiredScopes]
    required_scopes = ["read"]

    @extend_schema_serializer(component_name="User")
    class OutputSerializer(serializers.Serializer[User]):
        id = serializers.UUIDField()
        email = serializers.EmailField()
        business_name = serializers.CharField()

    @extend_schema(
        operation_id="me",
        summary="The connected user",
        description="The owner the token acts for; the platform's connection test.",
        tags=["Connection"],
        responses={200: OutputSerializer, **error_responses(401, 403)},
    )
    def get(self, request: AuthenticatedRequest, platform: str) -> Response:
        return Response(self.OutputSerializer(request.user).data)


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
