"""OAuth endpoints under /api/oauth/<platform>/: authorize (consent), token, revoke, RFC 7009.

Thin wrappers over django-oauth-toolkit's views; the rules live in ``validators``, ``server``
and ``services``. Each view receives the ``platform`` slug from the URL.
"""

from __future__ import annotations

import json
import logging
from typing import Any, TypedDict, TypeGuard
from urllib.parse import parse_qsl, unquote_plus, urlencode, urlsplit, urlunsplit

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.db import InterfaceError, OperationalError, connection, transaction
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.shortcuts import resolve_url
from django.template.response import TemplateResponse
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.debug import sensitive_post_parameters
from django.views.generic import View
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from oauth2_provider import views as dot_views
from oauth2_provider.exceptions import FatalClientError, OAuthToolkitError
from oauth2_provider.forms import AllowForm
from oauth2_provider.http import OAuth2ResponseRedirect
from oauth2_provider.models import AbstractAccessToken, AbstractApplication, get_application_model
from oauth2_provider.scopes import get_scopes_backend
from oauth2_provider.settings import oauth2_settings
from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.access import access_for, locations_reached
from accounts.models import User
from core.errors import error_response
from core.openapi import error_responses
from core.ratelimit import (
    RateLimitedView,
    basic_credentials,
    client_failure_count,
    client_failure_peek,
    client_failures_description,
)
from core.ratelimit_store import Usage
from core.security import strict_page

from . import services

logger = logging.getLogger(__name__)

Application = get_application_model()

# Seconds a client should wait before retrying after a transient fault.
RETRY_AFTER_SECONDS = 5
# How long the token endpoint waits for a row lock (PostgreSQL) before answering 503.
TOKEN_LOCK_TIMEOUT = "5s"

SENSITIVE_PARAMETERS = ("client_secret", "code", "code_verifier", "refresh_token", "token")


def _registered_exactly(
    application: AbstractApplication | None, redirect_uri: str | None
) -> TypeGuard[AbstractApplication]:
    return bool(application and redirect_uri and redirect_uri in application.redirect_uris.split())


def _with_issuer(uri: str) -> str:
    """Add the RFC 9207 ``iss`` parameter (error responses carry it too)."""
    parts = urlsplit(uri)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "iss"]
    query.append(("iss", oauth2_settings.OIDC_ISS_ENDPOINT))
    return urlunsplit(parts._replace(query=urlencode(query)))


@method_decorator(strict_page, name="dispatch")
class AuthorizeView(dot_views.AuthorizationView):  # type: ignore[misc]  # oauth2_provider ships no types
    """GET shows the consent page; POST (Approve or Deny) redirects back to the client.

    The consent page is always shown: a client's ``approval_prompt=auto`` and an application's
    ``skip_authorization`` are ignored. An unknown ``client_id`` or a ``redirect_uri`` that is not
    registered exactly is an error page (400), never a redirect; other errors go back to the
    registered URI with ``error`` and ``state``.
    """

    template_name = "oauth_provider/authorize.html"
    error_template_name = "oauth_provider/error.html"
    html_errors = True  # a page for people: its errors stay HTML (core.errors)

    def handle_no_permission(self) -> HttpResponse:
        # Anonymous: refuse bad clients here, before asking anyone to log in for them.
        try:
            self.validate_authorization_request(self.request)
        except FatalClientError as error:
            return self.error_response(error, application=None)
        except OAuthToolkitError:
            pass  # reported (by redirect) only once the owner is logged in
        return redirect_to_login(self.request.get_full_path(), resolve_url(settings.LOGIN_URL))

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            scopes, credentials = self.validate_authorization_request(request)
        except OAuthToolkitError as error:
            return self.error_response(error, application=None)
        application = credentials["request"].client
        all_scopes = get_scopes_backend().get_all_scopes()
        self.oauth2_data = {
            "client_id": credentials["client_id"],
            "redirect_uri": credentials["redirect_uri"],
            "response_type": credentials["response_type"],
            "state": credentials["state"],
            "scopes": scopes,
            "code_challenge": credentials.get("code_challenge"),
            "code_challenge_method": credentials.get("code_challenge_method"),
        }
        user = request.user
        assert isinstance(user, User)  # LoginRequiredMixin let only users in
        access = access_for(user)  # a member approves for themselves
        context = {
            "application": application,
            "business_name": access.owner.business_name,
            "locations": locations_reached(access),
            "every_location": access.location_ids is None,
            "role": access.role,
            "scopes_descriptions": [all_scopes[scope] for scope in scopes],
            "redirect_host": urlsplit(credentials["redirect_uri"]).hostname,
            "form": self.get_form(),
        }
        page: TemplateResponse = self.render_to_response(self.get_context_data(**context))
        return page

    def form_valid(self, form: AllowForm) -> HttpResponse:
        application = Application.objects.filter(client_id=form.cleaned_data["client_id"]).first()
        if application is None:
            return self._error_page("invalid_request", "Unknown client.")
        redirect: HttpResponse = super().form_valid(form)
        return redirect

    def form_invalid(self, form: AllowForm) -> HttpResponse:
        return self._error_page("invalid_request", "The authorization form was incomplete.")

    def error_response(
        self,
        error: OAuthToolkitError,
        application: AbstractApplication | None,
        **kwargs: Any,
    ) -> HttpResponse:
        oauthlib_error = error.oauthlib_error
        redirect_uri = oauthlib_error.redirect_uri
        if application is None and getattr(oauthlib_error, "client_id", None):
            application = Application.objects.filter(client_id=oauthlib_error.client_id).first()
        # Fatal errors (bad client or redirect URI) never redirect; as a second line of defence,
        # nothing is redirected to a URI that is not registered exactly.
        if isinstance(error, FatalClientError) or not _registered_exactly(
            application, redirect_uri
        ):
            return self._error_page(oauthlib_error.error, oauthlib_error.description)
        location = oauthlib_error.in_uri(redirect_uri)
        if oauth2_settings.COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS:
            location = _with_issuer(location)
        redirect: HttpResponse = OAuth2ResponseRedirect(location, application.get_allowed_schemes())
        return redirect

    def _error_page(self, error: str, description: str, *, status: int = 400) -> HttpResponse:
        page: TemplateResponse = self.response_class(
            request=self.request,
            template=[self.error_template_name],
            context={"error": error, "description": description},
            status=status,
        )
        return page


class TransientFaultsAs503(View):
    """A database fault (lock timeout, deadlock, connection lost) is 503 + Retry-After.

    Never a 4xx: an automation platform that gets a 4xx from a refresh disconnects the user.
    The whole request runs in one transaction; on PostgreSQL a lock wait longer than
    ``TOKEN_LOCK_TIMEOUT`` fails fast instead of holding a web worker.
    """

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            with transaction.atomic():
                if connection.vendor == "postgresql":
                    with connection.cursor() as cursor:
                        cursor.execute(
                            "SELECT set_config('lock_timeout', %s, true)", [TOKEN_LOCK_TIMEOUT]
                        )
                return super().dispatch(request, *args, **kwargs)
        except (OperationalError, InterfaceError) as exc:
            logger.warning(
                "oauth endpoint unavailable: %s", type(exc).__name__, extra={"path": request.path}
            )
            return oauth_error(
                503,
                "temporarily_unavailable",
                "The server is briefly unavailable; retry shortly.",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )


def oauth_error(
    status: int, error: str, description: str, *, headers: dict[str, str] | None = None
) -> JsonResponse:
    """An error of the OAuth endpoints in the API's shape, never cached (RFC 6749 §5.1)."""
    return error_response(
        status, error, description, headers={**(headers or {}), "Cache-Control": "no-store"}
    )


# oauthlib leaves error_description out of some errors (invalid_client, for one); the API's error
# shape always has one.
OAUTH_ERROR_DESCRIPTIONS = {
    "invalid_request": "The request is missing a required parameter or has an invalid one.",
    "invalid_client": "Client authentication failed: unknown client id or wrong secret.",
    "invalid_grant": "The authorization code or refresh token is invalid, expired, already "
    "used, or was issued to another client.",
    "unauthorized_client": "This client may not use this grant type.",
    "unsupported_grant_type": "Only the authorization_code and refresh_token grants exist.",
    "invalid_scope": "The requested scope is invalid or wider than the one granted.",
    "unsupported_token_type": "This token type cannot be revoked.",
}


class OAuthClientEndpoint(View):
    """What the token and RFC 7009 endpoints share.

    * Bodies are ``application/x-www-form-urlencoded`` (RFC 6749 §4.1.3, RFC 7009 §2.1): another
      type is 415 ``unsupported_media_type``, not a misleading grant error.
    * Errors always carry ``error_description`` (the API's one error shape).
    * Failed client authentications (401 ``invalid_client``) are counted per client id and per
      network (``core.ratelimit.client_failure_count``); past a limit, a failing request answers
      429 instead. The secret is checked first, in microseconds (``oauth_provider.hashers``):
      the right one is never refused, and successes are never counted. Past the limit, a wrong
      secret is refused before django-oauth-toolkit runs (``_presents_right_secret``).
    """

    rate_limit_scope = "client"

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        failures = client_failure_peek(request)  # also the X-RateLimit-* headers
        response = self._answer(request, failures, *args, **kwargs)
        if response.status_code != 401:
            return response
        usage = client_failure_count(request)
        return _too_many_failures(usage) if usage.exceeded else response

    def _answer(
        self, request: HttpRequest, failures: Usage, *args: Any, **kwargs: Any
    ) -> HttpResponseBase:
        if request.method == "POST" and request.content_type not in (
            "",
            "application/x-www-form-urlencoded",
        ):
            return oauth_error(
                415,
                "unsupported_media_type",
                "Send the parameters form-encoded, with Content-Type: "
                "application/x-www-form-urlencoded.",
            )
        if _carries_nul(request):
            # PostgreSQL cannot compare a string holding NUL: the lookup would fail as a 500.
            return oauth_error(
                400,
                "invalid_request",
                "Parameters and credentials must not contain NUL characters.",
            )
        if failures.count >= failures.limit and not _presents_right_secret(request):
            # Past the failure limit, a wrong secret is refused before DOT's work (a
            # transaction, oauthlib) and without counting it again: a flood costs one read of
            # the counters, one indexed lookup and an HMAC per request.
            return _too_many_failures(failures)
        response = super().dispatch(request, *args, **kwargs)
        if (
            isinstance(response, HttpResponse)  # as DOT answers: a streamed one has no .content
            and response.status_code >= 400
            and response.get("Content-Type", "").startswith("application/json")
        ):
            _describe_oauth_error(response)
        return response


# What the token and revocation endpoints read; other parameters are ignored (RFC 6749 §3.2).
_OAUTH_PARAMETERS = (
    "grant_type",
    "client_id",
    "client_secret",
    "code",
    "redirect_uri",
    "code_verifier",
    "refresh_token",
    "scope",
    "token",
    "token_type_hint",
)


def _too_many_failures(usage: Usage) -> HttpResponse:
    return oauth_error(
        429,
        "rate_limit_exceeded",
        client_failures_description(usage),
        headers={"Retry-After": str(usage.retry_after())},
    )


def _presents_right_secret(request: HttpRequest) -> bool:
    """Whether the request's client credentials (HTTP Basic, or the form body: DOT tries both)
    match a client. When in doubt (the database fails), True: DOT then decides."""
    presented: list[tuple[str, str]] = []
    decoded = basic_credentials(request)
    if decoded:
        client_id, _, secret = decoded.partition(":")
        presented.append((unquote_plus(client_id), unquote_plus(secret)))
    try:
        if request.method == "POST":
            form = request.POST
            presented.append((form.get("client_id", ""), form.get("client_secret", "")))
    except (RequestDataTooBig, SuspiciousOperation):
        return True  # DOT answers 413/400
    try:
        return any(
            services.client_secret_matches(client_id=client_id, secret=secret)
            for client_id, secret in presented
            if client_id and secret
        )
    except (OperationalError, InterfaceError):
        return True


def _carries_nul(request: HttpRequest) -> bool:
    """Whether a parameter the endpoints read, or the HTTP Basic credentials, hold a NUL."""
    # A malformed header decodes to "": DOT answers invalid_client.
    if "\x00" in unquote_plus(basic_credentials(request) or ""):
        return True
    if request.method != "POST":
        return False
    try:
        return any(
            "\x00" in value for name in _OAUTH_PARAMETERS for value in request.POST.getlist(name)
        )
    except (RequestDataTooBig, SuspiciousOperation):
        return False  # the view answers 413/400 when it reads the body


def _describe_oauth_error(response: HttpResponse) -> None:
    try:
        body = json.loads(response.content)
    except ValueError:
        return
    if isinstance(body, dict) and body.get("error") and not body.get("error_description"):
        body["error_description"] = OAUTH_ERROR_DESCRIPTIONS.get(
            body["error"], f"OAuth error: {body['error']}."
        )
        response.content = json.dumps(body)


@method_decorator(csrf_exempt, name="dispatch")  # clients authenticate; there is no session
@method_decorator(sensitive_post_parameters(*SENSITIVE_PARAMETERS), name="dispatch")
class TokenView(OAuthClientEndpoint, TransientFaultsAs503, dot_views.TokenView):  # type: ignore[misc]  # oauth2_provider ships no types
    """``authorization_code`` and ``refresh_token`` grants, form-encoded, client authenticated."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        # DOT's post() also routes the device grant; this server has none.
        response: HttpResponse = self.authorization_flow_token_response(request)
        # Errors raised before a grant runs (e.g. credentials in the URL) come without headers.
        response["Content-Type"] = "application/json"
        response["Cache-Control"] = "no-store"
        response["Pragma"] = "no-cache"
        return response


@method_decorator(csrf_exempt, name="dispatch")
@method_decorator(sensitive_post_parameters(*SENSITIVE_PARAMETERS), name="dispatch")
class RevokeTokenView(OAuthClientEndpoint, TransientFaultsAs503, dot_views.RevokeTokenView):  # type: ignore[misc]  # oauth2_provider ships no types
    """RFC 7009 revocation for clients: form-encoded, client-authenticated, always 200."""


class _TokenField(serializers.CharField):
    """A token is a JSON string: DRF's CharField would also take 123 and revoke nothing."""

    def to_internal_value(self, data: object) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class RevokeResult(TypedDict):
    success: bool
    message: str
    revoked_count: int


class RevokeApi(RateLimitedView, APIView):
    """Disconnect: revoke one of the caller's tokens, or all of them (the owner, this client)."""

    @extend_schema_serializer(component_name="RevokeRequest")
    class InputSerializer(serializers.Serializer[None]):  # input only: no instance
        token = _TokenField(required=False, max_length=512)

    @extend_schema_serializer(component_name="RevokeResult")
    class OutputSerializer(serializers.Serializer[RevokeResult]):
        success = serializers.BooleanField()
        message = serializers.CharField()
        revoked_count = serializers.IntegerField(min_value=0)

    @extend_schema(
        operation_id="revoke",
        summary="Disconnect: revoke the caller's tokens",
        description="With `token`: revoke that token's connection (if it is one of the "
        "caller's, for this client). Without a body: revoke all of the owner's tokens for the "
        "calling client. Any valid token may call it.",
        tags=["OAuth"],
        request=InputSerializer,
        responses={200: OutputSerializer, **error_responses(400, 401, 413, 415)},
    )
    def post(self, request: Request, platform: str) -> Response:
        if not isinstance(request.data, dict):  # JSON null, a list, a number...: not "no body"
            raise ParseError("The request body must be a JSON object (or empty).")
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        token: str | None = serializer.validated_data.get("token")
        access_token: AbstractAccessToken = request.auth  # set by OAuth2Authentication
        user = request.user
        assert isinstance(user, AbstractBaseUser)  # IsAuthenticated let only token owners in
        application = access_token.application
        if token is None:
            count = services.user_tokens_revoke(user=user, application=application)
            message = f"Revoked {count} token(s): {application.name} is disconnected."
        else:
            count = services.token_revoke(token=token, application=application, user=user)
            message = f"Revoked {count} token(s)." if count else "No active token of yours matched."
        result: RevokeResult = {"success": True, "message": message, "revoked_count": count}
        return Response(result)
