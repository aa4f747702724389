"""Per-client OAuth policies that django-oauth-toolkit asks for by callable."""

from __future__ import annotations

from django.conf import settings


def pkce_required(client_id: str) -> bool:
    """PKCE is optional (spec §5), except for clients listed in OAUTH_PKCE_REQUIRED_CLIENTS.

    Whether or not it is required, only S256 is accepted (COMPLIANT_BCP_RFC9700_PKCE_METHOD).
    """
    return client_id in settings.OAUTH_PKCE_REQUIRED_CLIENTS
