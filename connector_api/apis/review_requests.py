"""``POST /api/<platform>/send-review-request`` and ``GET .../send-review-request/fields``.

Both are built from ``contact_input.normalize.CONTACT_FIELDS``: the input serializer parses exactly
those keys (others are ignored) and the fields endpoint documents exactly those, so the two
cannot drift apart. The rules (normalisation, dedup, cooldown, channels, quiet hours) live in
``reviews.services.contact_add``; this module only parses, calls it and renders.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
)
from rest_framework import serializers
from rest_framework.exceptions import ParseError, UnsupportedMediaType
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.access import locations_reached
from connector_api.idempotency import HEADER, REPLAYED_HEADER, idempotent
from connector_api.lookups import (
    LOCATION_FIELD,
    api_access,
    is_owner_token,
    location_for_send,
    require_write,
)
from connector_api.openapi import (
    REVIEW_REQUEST_EXAMPLE,
    ContactRequest,
    InputFieldsBody,
    InputFieldSpec,
    InputFieldsResponse,
    ReviewRequestSerializer,
)
from connector_api.permissions import AuthenticatedRequest, TokenHasRequiredScopes
from contact_input.normalize import CONTACT_FIELDS, ContactInput, FieldKind, clean_contact_input
from core.openapi import error_responses
from core.ratelimit import RateLimitedView
from reviews.models import BusinessSettings, Contact
from reviews.representations import review_request_object
from reviews.services import contact_add

ENDPOINT = "send-review-request"


class SendReviewRequestApi(RateLimitedView, APIView):
    """Add a contact (deduplicated) and schedule at most one review request for them."""

    permission_classes = [TokenHasRequiredScopes]
    required_scopes = ["write"]

    class InputSerializer(serializers.Serializer[None]):
        """The body, parsed once by the service's own parser (``clean_contact_input``): every
        accepted key, unknown keys ignored, each bad field named in one 400. No declared
        fields: a serializer field per key parsed everything a second time and deep-copied
        its fields on every request (the write path's CPU, docs/benchmarks.md)."""

        def to_internal_value(self, data: Any) -> ContactInput:
            try:
                return clean_contact_input(data, default_region=self.context["default_region"])
            except DjangoValidationError as exc:
                raise serializers.ValidationError(serializers.as_serializer_error(exc)) from None

    OutputSerializer = ReviewRequestSerializer

    def handle_exception(self, exc: Exception) -> Response:
        # The contract for this endpoint: a body that is not JSON is a 400 invalid_request.
        if isinstance(exc, UnsupportedMediaType):
            exc = ParseError(
                "The request body must be a JSON object sent with Content-Type: application/json."
            )
        return super().handle_exception(exc)

    @extend_schema(
        operation_id="send_review_request",
        summary="Add a contact and schedule a review request",
        description="Deduplicates the contact (same e-mail or phone: updated, not duplicated) "
        "and schedules at most one review request, sent by SMS or e-mail at `scheduled_for`, "
        "then follow-ups. 201: a new request; 200: an existing one is returned (active, or "
        "within the cooldown). A body that is not a JSON object is a 400.",
        tags=["Contacts"],
        request=ContactRequest,
        parameters=[
            OpenApiParameter(
                HEADER,
                {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"},
                OpenApiParameter.HEADER,
                required=False,
                description="1 to 255 visible ASCII characters, derived from the triggering "
                "record. A retry with the same key and body gets the first response again; "
                "kept 72 hours.",
            ),
            OpenApiParameter(
                REPLAYED_HEADER,
                str,
                OpenApiParameter.HEADER,
                response=[200, 201],
                enum=["true"],
                description="Present (`true`) when this is the stored first response to the "
                "same Idempotency-Key.",
            ),
        ],
        responses={
            201: OpenApiResponse(OutputSerializer, description="A new review request."),
            200: OpenApiResponse(
                OutputSerializer,
                description="An existing review request (the contact has an active one, or "
                "one within the cooldown); no new request was created.",
            ),
            **error_responses(400, 401, 403, 409, 413, 422),
        },
        examples=[REVIEW_REQUEST_EXAMPLE],
    )
    def post(self, request: AuthenticatedRequest, platform: str) -> Response:
        if not isinstance(request.data, dict):
            raise ParseError("The request body must be a JSON object.")
        require_write(request)
        return idempotent(request, endpoint=ENDPOINT, handler=lambda: self._add(request))

    def _add(self, request: AuthenticatedRequest) -> Response:
        owner = request.user.account or request.user  # the account, whoever of it calls
        policy = BusinessSettings.for_owner(owner)
        data = request.data
        assert isinstance(data, dict)  # post() checked
        location_id = location_for_send(
            request,
            data.get(LOCATION_FIELD),
            account_location_ids=[loc.id for loc in policy.locations],
        )
        serializer = self.InputSerializer(
            data=request.data, context={"default_region": owner.default_region}
        )
        serializer.is_valid(raise_exception=True)
        try:
            result = contact_add(
                owner=owner,
                data=serializer.validated_data,
                source=Contact.Source.API,
                policy=policy,
                location_id=location_id,
            )
        except DjangoValidationError as exc:
            raise serializers.ValidationError(serializers.as_serializer_error(exc)) from None
        # The body is already the contract's strings and nulls: OutputSerializer documents it.
        at = policy.at(result.review_request.location_id) if policy.locations else None
        body = review_request_object(
            result.review_request,
            contact=result.contact,
            message=result.message,
            location=at.location if at is not None else None,
        )
        return Response(body, status=201 if result.created else 200)


class SendReviewRequestFieldsApi(RateLimitedView, APIView):
    """Input fields for the automation platform's editor (Zapier's input-field schema)."""

    permission_classes = [TokenHasRequiredScopes]
    required_scopes = ["read"]

    @extend_schema(
        operation_id="send_review_request_fields",
        summary="Input fields of send-review-request",
        description="One Zapier input field (`PlainInputFieldSchema`) per key the POST accepts; "
        '`location_id` first, as a dynamic dropdown (`"dynamic": "locations.id.name"`), '
        "when the user has more than one location.",
        tags=["Contacts"],
        responses={200: InputFieldsResponse, **error_responses(401, 403)},
    )
    def get(self, request: AuthenticatedRequest, platform: str) -> Response:
        owner = request.user.account or request.user
        policy = BusinessSettings.for_owner(owner)
        fields = input_fields(default_delay_hours=policy.default_delay_hours)
        several = (
            len(policy.locations) > 1
            if is_owner_token(request)
            else len(locations_reached(api_access(request))) > 1
        )
        if several:
            fields.insert(0, location_input_field())
        body: InputFieldsBody = {"fields": fields}
        return Response(body)


def location_input_field() -> InputFieldSpec:
    """``location_id`` as a Zapier dynamic dropdown over the hidden ``locations`` trigger
    (offered only to a user with more than one location to choose from)."""
    return {
        "key": LOCATION_FIELD,
        "label": "Location",
        "type": "string",
        "required": False,
        "dynamic": "locations.id.name",
        "helpText": "Where the review request is sent from. Blank: your only location, or "
        "the account's default location.",
    }


def input_fields(*, default_delay_hours: int) -> list[InputFieldSpec]:
    """Each accepted key as a Zapier ``PlainInputFieldSchema`` object.

    Zapier's rules: ``key`` required; ``type`` from its list; ``default`` and ``placeholder``
    non-empty strings; ``helpText`` at most 1000 characters; ``dict`` must not be combined
    with ``list`` (``type`` with ``dict`` is allowed: the values are strings).
    """
    fields = []
    for spec in CONTACT_FIELDS:
        field: InputFieldSpec = {
            "key": spec.key,
            "label": spec.label,
            "type": "integer" if spec.kind == FieldKind.HOURS else "string",
            "required": False,
            "helpText": spec.help_text,
        }
        if spec.placeholder:
            field["placeholder"] = spec.placeholder
        if spec.kind == FieldKind.HOURS:
            field["default"] = str(default_delay_hours)
        if spec.kind == FieldKind.OBJECT:
            field["dict"] = True
        fields.append(field)
    return fields
