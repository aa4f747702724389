"""REST hooks (``/api/<platform>/hooks``): how a platform subscribes to events (Zapier's
``performSubscribe``/``performUnsubscribe``). The rules (event types, target checks, the
secret) live in ``events.services``; docs/events.md describes what is then delivered."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.response import Response
from rest_framework.views import APIView

from connector_api.lookups import owned_or_404
from connector_api.permissions import AuthenticatedRequest, TokenHasRequiredScopes
from core.openapi import error_responses
from core.ratelimit import RateLimitedView
from core.times import iso_utc
from events.models import EventType, WebhookSubscription
from events.services import (
    SubscriptionRefused,
    webhook_subscription_create,
    webhook_subscription_delete,
)


class HookInput(serializers.Serializer[dict[str, Any]]):
    target_url = serializers.CharField(
        max_length=2000,
        help_text="Where to POST the events: an `https://` URL on the public internet.",
    )
    event = serializers.ChoiceField(choices=EventType.values, help_text="The event type.")


class HookCreated(serializers.Serializer[dict[str, Any]]):
    id = serializers.UUIDField()
    event = serializers.ChoiceField(choices=EventType.values)
    target_url = serializers.CharField()
    secret = serializers.CharField(
        help_text="`whsec_` + base64 key of the `webhook-signature` HMAC; shown only here."
    )
    created_at = serializers.CharField()


class Hook(serializers.Serializer[dict[str, Any]]):
    id = serializers.UUIDField()
    event = serializers.ChoiceField(choices=EventType.values)
    target_url = serializers.CharField()
    created_at = serializers.CharField()
    active = serializers.BooleanField(help_text="`false` once disabled after failing for days.")
    disabled_at = serializers.CharField(allow_null=True)


class HookList(serializers.Serializer[dict[str, Any]]):
    results = Hook(many=True)
    next = serializers.CharField(allow_null=True, help_text="Always `null`: one page.")


def hook_body(subscription: WebhookSubscription) -> dict[str, Any]:
    return {
        "id": str(subscription.pk),
        "event": subscription.event,
        "target_url": subscription.target_url,
        "created_at": iso_utc(subscription.created_at),
        "active": subscription.is_active,
        "disabled_at": iso_utc(subscription.disabled_at) if subscription.disabled_at else None,
    }


class HooksApi(RateLimitedView, APIView):
    """``POST`` subscribes (write), ``GET`` lists the owner's subscriptions (read)."""

    permission_classes = [TokenHasRequiredScopes]

    @property
    def required_scopes(self) -> list[str]:  # what DOT's TokenHasScope reads
        return ["read"] if self.request.method == "GET" else ["write"]

    @extend_schema(
        operation_id="subscribe_hook",
        summary="Subscribe a URL to an event",
        description="Events of this type are then POSTed to `target_url`, signed as the "
        "Standard Webhooks spec says with the returned `secret` (shown only here). The URL "
        "must be `https://` and resolve to public addresses only. A `410 Gone` answer to a "
        "delivery removes the subscription.",
        tags=["Hooks"],
        request=HookInput,
        responses={201: HookCreated, **error_responses(400, 401, 403)},
        examples=[
            OpenApiExample(
                "Subscribe",
                value={
                    "target_url": "https://93.184.216.34/hooks/catch/1/abc/",
                    "event": "review_request.clicked",
                },
                request_only=True,
            ),
            OpenApiExample(
                "Subscribed",
                value={
                    "id": "7c9e6679-7425-40de-944b-e07fc1f90ae7",
                    "event": "review_request.clicked",
                    "target_url": "https://93.184.216.34/hooks/catch/1/abc/",
                    "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw9hUGtb6jRjQ=",
                    "created_at": "2026-11-21T15:00:00Z",
                },
                response_only=True,
            ),
        ],
    )
    def post(self, request: AuthenticatedRequest, platform: str) -> Response:
        if not isinstance(request.data, dict):
            raise ParseError("The request body must be a JSON object.")
        unknown = sorted(set(request.data) - set(HookInput().fields))
        if unknown:
            # A misspelt key ("targetUrl") must not subscribe something else than was meant.
            raise serializers.ValidationError(
                {unknown[0]: ["Unknown field: a subscription takes target_url and event only."]}
            )
        serializer = HookInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            subscription = webhook_subscription_create(
                owner=request.user, **serializer.validated_data
            )
        except SubscriptionRefused as exc:
            key = exc.field or "non_field_errors"
            raise serializers.ValidationError({key: [str(exc)]}) from None
        body = {
            "id": str(subscription.pk),
            "event": subscription.event,
            "target_url": subscription.target_url,
            "secret": subscription.secret,
            "created_at": iso_utc(subscription.created_at),
        }
        return Response(body, status=201)

    @extend_schema(
        operation_id="list_hooks",
        summary="The connected owner's subscriptions",
        description="Every subscription of the owner, newest first (secrets are not shown).",
        tags=["Hooks"],
        responses={200: HookList, **error_responses(401, 403)},
    )
    def get(self, request: AuthenticatedRequest, platform: str) -> Response:
        hooks = WebhookSubscription.objects.filter(owner=request.user).order_by("-created_at")
        return Response({"results": [hook_body(h) for h in hooks], "next": None})


class HookApi(RateLimitedView, APIView):
    """``DELETE /api/<platform>/hooks/<id>`` unsubscribes (write)."""

    permission_classes = [TokenHasRequiredScopes]
    required_scopes = ["write"]

    @extend_schema(
        operation_id="unsubscribe_hook",
        summary="Unsubscribe",
        description="Deletes the subscription; deliveries not yet made are dropped. Another "
        "owner's id, or one already deleted, is a 404.",
        tags=["Hooks"],
        responses={
            204: OpenApiResponse(description="Deleted."),
            **error_responses(401, 403, 404),
        },
    )
    def delete(self, request: AuthenticatedRequest, platform: str, hook_id: str) -> Response:
        owner = request.user
        hook = owned_or_404(
            WebhookSubscription.objects.all(), owner=owner, pk=hook_id, not_found="No such hook."
        )
        # Deleted meanwhile by a parallel call: gone all the same.
        webhook_subscription_delete(owner=owner, subscription_id=hook.pk)
        return Response(status=204)
