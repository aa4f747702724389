"""The one place the API checks access tokens (first in DRF's authentication classes).

Everything about a bearer token on the resource side happens here, so that a later token cache
has one place to live: the token is taken from the ``Authorization`` header only (never from the
query string or the body), looked up by its hash, must be unexpired and belong to an active
owner, and each use is recorded on its connection (``services.connection_touch``).

Lookups go through ``token_cache`` first: a token validated against the database is cached
(by digest) for ``OAUTH_TOKEN_CACHE_SECONDS``, and any revocation or change of the token or its
owner invalidates it before the revoking request answers, so the next request is refused.

An invalid, expired or revoked token raises ``AuthenticationFailed``: 401
``{"error": "unauthorized", ...}`` with a ``WWW-Authenticate: Bearer`` challenge, which is what
makes an automation platform refresh the token and retry (a 403 would not).
"""

from __future__ import annotations

from django.contrib.auth.base_user import AbstractBaseUser
from oauth2_provider.contrib.rest_framework import OAuth2Authentication as DOTOAuth2Authentication
from oauth2_provider.models import AbstractAccessToken
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from . import services, token_cache


class OAuth2Authentication(DOTOAuth2Authentication):  # type: ignore[misc]  # oauth2_provider ships no types
    def authenticate(self, request: Request) -> tuple[AbstractBaseUser, AbstractAccessToken] | None:
        if "access_token" in request.query_params:
            # RFC 9700 §4.3.2: tokens in URLs end up in logs and Referer headers.
            request.oauth2_error = {"error": "invalid_request"}  # type: ignore[attr-defined]  # DOT's challenge reads it
            raise AuthenticationFailed(
                "Access tokens are not accepted in the URL; send Authorization: Bearer <token>."
            )
        scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return None  # no credentials: a view that needs them answers 401
        state, result = token_cache.lookup(credentials.strip())
        if result is None:
            # The plain Django request: the token is in a header, and DOT would otherwise make
            # DRF parse the body before authentication (a body of the wrong type would be 415).
            result = super().authenticate(request._request)
            if result is None:
                error = getattr(request, "oauth2_error", None) or {}
                raise AuthenticationFailed(
                    error.get("error_description") or "The access token is invalid or was revoked."
                )
            if result[0].is_active:
                token_cache.store(state, *result)
        user, access_token = result
        if not user.is_active:
            request.oauth2_error = {"error": "invalid_token"}  # type: ignore[attr-defined]  # DOT's challenge reads it
            raise AuthenticationFailed("The account this token belongs to is disabled.")
        services.connection_touch(access_token=access_token)
        return result
