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

from connector_api.lookups import (
    api_access,
    location_filter,
    reachable_or_404,
    subscriptions_of,
)
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
    location_id = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        default=None,
        help_text="Only the events of this location (an `id` from GET /locations); absent: "
        "the events of every location the user reaches (a member's subscription never "
        "receives another location's).",
    )


class HookCreated(serializers.Serializer[dict[str, Any]]):
    id = serializers.UUIDField()
    event = serializers.ChoiceField(choices=EventType.values)
    target_url = serializers.CharField()
    secret = serializers.CharField(
        help_text="`whsec_` + base64 key of the `webhook-signature` HMAC; shown only here."
    )
    created_at = serializers.CharField()
    location_id = serializers.UUIDField(
        allow_null=True, help_text="The location it is limited to; `null`: every one reached."
    )


class Hook(serializers.Serializer[dict[str, Any]]):
    id = serializers.UUIDField()
    event = serializers.ChoiceField(choices=EventType.values)
    target_url = serializers.CharField()
    created_at = serializers.CharField()
    active = serializers.BooleanField(help_text="`false` once disabled after failing for days.")
    disabled_at = serializers.CharField(allow_null=True)
    location_id = serializers.UUIDField(
        allow_null=True, help_text="The location it is limited to; `null`: every one reached."
    )


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
        "location_id": _location_id(subscription),
    }


def _location_id(subscription: WebhookSubscription) -> str | None:
    return str(subscription.location_id) if subscription.location_id else None


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
        "Standard Webhooks spec says with the returned `secret` (shown only here), for the "
        "locations the user reaches (`location_id`: one of them only). The URL "
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
        access = api_access(request)
        params = serializer.validated_data
        try:
            subscription = webhook_subscription_create(
                owner=access.owner,
                subscriber=request.user if access.location_ids is not None else None,
                location_id=location_filter(access, params["location_id"]),
                event=params["event"],
                target_url=params["target_url"],
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
            "location_id": _location_id(subscription),
        }
        return Response(body, status=201)

    @extend_schema(
        operation_id="list_hooks",
        summary="The connected user's subscriptions",
        description="The owner's token: every subscription of the account; a member's: their "
        "own. Newest first (secrets are not shown).",
        tags=["Hooks"],
        responses={200: HookList, **error_responses(401, 403)},
    )
    def get(self, request: AuthenticatedRequest, platform: str) -> Response:
        hooks = subscriptions_of(api_access(request)).order_by("-created_at")
        return Response({"results": [hook_body(h) for h in hooks], "next": None})


class HookApi(RateLimitedView, APIView):
    """``DELETE /api/<platform>/hooks/<id>`` unsubscribes (write)."""

    permission_classes = [TokenHasRequiredScopes]
    required_scopes = ["write"]

    @extend_schema(
        operation_id="unsubscribe_hook",
        summary="Unsubscribe",
        description="Deletes the subscription; deliveries not yet made are dropped. Another "
        "account's id, another member's (for a member's token), or one already deleted, is "
        "a 404.",
        tags=["Hooks"],
        responses={
            204: OpenApiResponse(description="Deleted."),
            **error_responses(401, 403, 404),
        },
    )
    def delete(self, request: AuthenticatedRequest, platform: str, hook_id: str) -> Response:
        access = api_access(request)
        hook = reachable_or_404(
            subscriptions_of(access),
            access=access,
            pk=hook_id,
            not_found="No such hook.",
            location_field=None,
        )
        # Deleted meanwhile by a parallel call: gone all the same.
        webhook_subscription_delete(owner=access.owner, subscription_id=hook.pk)
        return Response(status=204)
