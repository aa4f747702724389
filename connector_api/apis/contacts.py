"""``GET /api/<platform>/contacts?email=|phone=``: find the owner's contact by e-mail or phone,
with their latest review request (Zapier's "Find Contact" search).

The e-mail and the phone are read by the same rules as ``send-review-request`` reads them
(``contact_input.normalize``: the e-mail's dedup key, the phone in E.164 with the owner's default
region), so any format that would match an existing contact when adding finds it here.
"""

from __future__ import annotations

import uuid
from typing import Any, TypedDict

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.access import Access
from connector_api.lookups import api_access, location_filter
from connector_api.openapi import REVIEW_REQUEST_EXAMPLE, ReviewRequestSerializer
from connector_api.permissions import AuthenticatedRequest, TokenHasRequiredScopes
from contact_input.normalize import normalize_email, normalize_phone
from core.openapi import error_responses
from core.ratelimit import RateLimitedView
from core.times import iso_utc
from reviews import selectors
from reviews.models import Contact
from reviews.representations import review_request_object


class ContactBody(TypedDict):
    """A contact as the API shows it (``ContactSerializer`` documents it)."""

    id: str
    name: str
    first_name: str
    last_name: str
    company_name: str
    email: str | None
    phone: str | None
    sms_opted_out: bool
    email_opted_out: bool
    created_at: str
    latest_review_request: dict[str, Any] | None


class ContactPage(TypedDict):
    """The lookup's answer: one page of contacts (``ContactLookupApi.OutputSerializer``)."""

    results: list[ContactBody]
    next: None


class ContactSerializer(serializers.Serializer[ContactBody]):
    id = serializers.CharField()
    name = serializers.CharField(allow_blank=True, help_text="First and last name.")
    first_name = serializers.CharField(allow_blank=True)
    last_name = serializers.CharField(allow_blank=True)
    company_name = serializers.CharField(allow_blank=True)
    email = serializers.CharField(allow_null=True)
    phone = serializers.CharField(allow_null=True, help_text="E.164.")
    sms_opted_out = serializers.BooleanField()
    email_opted_out = serializers.BooleanField()
    created_at = serializers.CharField(help_text="ISO 8601 UTC.")
    latest_review_request = ReviewRequestSerializer(
        allow_null=True, help_text="The contact's newest review request; `null` when none."
    )


def contact_body(
    contact: Contact, *, access: Access, location_id: uuid.UUID | None = None
) -> ContactBody:
    latest = selectors.review_request_latest_visible(
        access=access, contact=contact, location_id=location_id
    )
    return {
        "id": str(contact.id),
        "name": contact.full_name,
        "first_name": contact.first_name,
        "last_name": contact.last_name,
        "company_name": contact.company_name,
        "email": contact.email or None,
        "phone": contact.phone or None,
        "sms_opted_out": contact.sms_opted_out_at is not None,
        "email_opted_out": contact.email_opted_out_at is not None,
        "created_at": iso_utc(contact.created_at),
        "latest_review_request": (
            review_request_object(latest, contact=contact) if latest else None
        ),
    }


class ContactLookupApi(RateLimitedView, APIView):
    """Find a contact by e-mail or phone."""

    permission_classes = [TokenHasRequiredScopes]
    required_scopes = ["read"]

    class QuerySerializer(serializers.Serializer[None]):
        email = serializers.CharField(
            required=False,
            default="",
            trim_whitespace=False,
            help_text="Compared as the service deduplicates contacts (case does not matter).",
        )
        phone = serializers.CharField(
            required=False,
            default="",
            trim_whitespace=False,
            help_text="Any format; numbers without a country code are read in the business's "
            "default region.",
        )
        location_id = serializers.CharField(
            required=False,
            default="",
            help_text="Only a contact with a review request at this location (an `id` from "
            "GET /locations); their latest request there.",
        )

        def validate(self, attrs: dict[str, str]) -> dict[str, Any]:
            if not attrs["email"].strip() and not attrs["phone"].strip():
                raise serializers.ValidationError("Give `email` or `phone` (or both).")
            found: dict[str, Any] = {}
            errors: dict[str, list[str]] = {}
            try:
                found["email_key"] = normalize_email(attrs["email"])[1]
            except DjangoValidationError as exc:
                errors["email"] = exc.messages
            try:
                found["phone"] = normalize_phone(attrs["phone"], self.context["default_region"])
            except DjangoValidationError as exc:
                errors["phone"] = exc.messages
            if errors:
                raise serializers.ValidationError(errors)
            found["location_id"] = location_filter(self.context["access"], attrs["location_id"])
            return found

    @extend_schema_serializer(component_name="ContactPage")
    class OutputSerializer(serializers.Serializer[ContactPage]):
        results = ContactSerializer(many=True)
        next = serializers.CharField(allow_null=True, help_text="Always `null`: one page.")

    @extend_schema(
        operation_id="contacts_lookup",
        summary="Find a contact by e-mail or phone",
        description="The account's contact with this e-mail or this phone number (either "
        "matches when both are given; the e-mail's match first), with their latest review "
        "request. An empty list when none; 400 when neither is given.",
        tags=["Contacts"],
        parameters=[QuerySerializer],
        responses={200: OutputSerializer, **error_responses(400, 401, 403)},
        examples=[
            OpenApiExample(
                "Found",
                value={
                    "results": [
                        {
                            "id": REVIEW_REQUEST_EXAMPLE.value["contact_id"],
                            "name": "Jane Smith",
                            "first_name": "Jane",
                            "last_name": "Smith",
                            "company_name": "",
                            "email": "jane@example.com",
                            "phone": "+14155552671",
                            "sms_opted_out": False,
                            "email_opted_out": False,
                            "created_at": "2026-11-21T13:00:00Z",
                            "latest_review_request": REVIEW_REQUEST_EXAMPLE.value,
                        }
                    ],
                    "next": None,
                },
                response_only=True,
            )
        ],
    )
    def get(self, request: AuthenticatedRequest, platform: str) -> Response:
        access = api_access(request)
        query = self.QuerySerializer(
            data=request.query_params,
            context={"default_region": access.owner.default_region, "access": access},
        )
        query.is_valid(raise_exception=True)
        params = query.validated_data
        contacts = selectors.contacts_find(access=access, **params)
        body: ContactPage = {
            "results": [
                contact_body(c, access=access, location_id=params["location_id"]) for c in contacts
            ],
            "next": None,
        }
        return Response(body)
