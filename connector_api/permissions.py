"""Scope checks for connector endpoints: a token lacking the scope gets 403 insufficient_scope,
and the request type a connector view receives once those checks have passed."""

from __future__ import annotations

from oauth2_provider.contrib.rest_framework import TokenHasScope
from oauth2_provider.models import AccessToken
from rest_framework.request import Request

from accounts.models import User


# django-oauth-toolkit ships no type information, so its classes are Any to mypy.
class TokenHasRequiredScopes(TokenHasScope):  # type: ignore[misc]  # DOT is untyped (Any base)
    """DOT's scope check (views declare ``required_scopes``) with our error code and message."""

    message = "The access token does not grant the scope this endpoint requires."
    code = "insufficient_scope"


class AuthenticatedRequest(Request):
    """What a connector view's handler receives: DRF's request once the bearer token has been
    authenticated and the permission checks have passed (every connector view requires a valid
    token), so ``user`` is the owner the token acts for and ``auth`` is that access token.

    For annotations only: the object is DRF's ``Request``; nothing instantiates this class.
    """

    user: User
    auth: AccessToken
