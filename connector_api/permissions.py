"""Scope checks for connector endpoints: a token lacking the scope gets 403 insufficient_scope."""

from __future__ import annotations

from oauth2_provider.contrib.rest_framework import TokenHasScope


class TokenHasRequiredScopes(TokenHasScope):
    """DOT's scope check (views declare ``required_scopes``) with our error code and message."""

    message = "The access token does not grant the scope this endpoint requires."
    code = "insufficient_scope"
