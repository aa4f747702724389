"""django-oauth-toolkit's request validator, hardened where DOT 3.4.1 leaves gaps.

* Redirect URIs match a registered URI as an exact string (RFC 9700 §2.1), and one is required
  at both endpoints (no silent default).
* PKCE (S256 only) is required of the clients in ``OAUTH_PKCE_REQUIRED_CLIENTS``, optional for
  the others.
* Authorization codes are stored as SHA-256 digests, are single-use under concurrent redemption
  (the grant row is locked inside the token endpoint's transaction), and a used code presented
  again revokes the connection it created (RFC 6749 §4.1.2).
* Every authorization creates a ``Connection``; its id is the token family of every token minted
  from it.
* Refresh rotation with reuse detection, plus a short grace path for parallel refreshes: within
  ``OAUTH_REFRESH_GRACE_SECONDS`` of a rotation, the token just rotated may be presented again by
  the same client and gets a *new* pair in the same family. After the window, or for a token that
  was revoked rather than rotated, presenting it revokes the whole connection. (DOT's own grace
  period replays the stored plaintext pair, which hashed token storage cannot do.)
* Revoking any token through RFC 7009 ends its connection.
* Client secrets stored under an older hasher (PBKDF2) are re-hashed with the fast keyed hash
  (``oauth_provider.hashers``) at their first successful use.
"""

from __future__ import annotations

import base64
import binascii
import logging
import uuid
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import unquote_plus

from django.conf import settings
from django.db.models import F
from django.utils import timezone
from oauth2_provider.exceptions import FatalClientError
from oauth2_provider.models import (
    AbstractApplication,
    AbstractGrant,
    AbstractRefreshToken,
    get_access_token_model,
    get_grant_model,
    get_refresh_token_model,
    refresh_token_expire_timedelta,
    set_token_value,
)
from oauth2_provider.oauth2_validators import OAuth2Validator as DOTOAuth2Validator
from oauth2_provider.settings import oauth2_settings
from oauthlib.common import Request
from oauthlib.oauth2.rfc6749 import errors
from oauthlib.oauth2.rfc6749.tokens import OAuth2Token

from . import services
from .models import Connection, RedeemedCode, token_digest

logger = logging.getLogger(__name__)

AccessToken = get_access_token_model()
Grant = get_grant_model()
RefreshToken = get_refresh_token_model()


def _presented_secrets(request: Request) -> list[str]:
    """The client secrets an oauthlib request carries: HTTP Basic first, then the form body, the
    order in which django-oauth-toolkit tries them."""
    presented: list[str] = []
    header = request.headers.get("HTTP_AUTHORIZATION") or request.headers.get("Authorization")
    scheme, _, credentials = (header or "").partition(" ")
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(credentials.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            decoded = ""
        if ":" in decoded:
            presented.append(unquote_plus(decoded.split(":", 1)[1]))
    if request.client_secret:
        presented.append(request.client_secret)
    return presented


class OAuth2Validator(DOTOAuth2Validator):  # type: ignore[misc]  # oauth2_provider ships no types
    # --- Client authentication -------------------------------------------------------------------

    def authenticate_client(self, request: Request, *args: Any, **kwargs: Any) -> bool:
        """DOT's check (Basic, then the form body); a secret stored under an older hasher is
        then re-hashed with the fast one (``oauth_provider.hashers``)."""
        authenticated: bool = super().authenticate_client(request, *args, **kwargs)
        if authenticated and request.client is not None:
            services.client_secret_rehash(
                application=request.client, presented=_presented_secrets(request)
            )
        return authenticated

    # --- Redirect URIs ---------------------------------------------------------------------------

    def get_default_redirect_uri(
        self, client_id: str, request: Request, *args: Any, **kwargs: Any
    ) -> None:
        # The spec makes redirect_uri required; never fall back to a registered one.
        return None

    def validate_redirect_uri(
        self, client_id: str, redirect_uri: str, request: Request, *args: Any, **kwargs: Any
    ) -> bool:
        registered: list[str] = request.client.redirect_uris.split()
        valid: bool = redirect_uri in registered and super().validate_redirect_uri(
            client_id, redirect_uri, request, *args, **kwargs
        )
        return valid

    # --- PKCE ------------------------------------------------------------------------------------

    def is_pkce_required(self, client_id: str, request: Request) -> bool:
        """PKCE is optional (docs/oauth.md), except for clients listed in
        OAUTH_PKCE_REQUIRED_CLIENTS.

        Whether or not it is required, only S256 is accepted (COMPLIANT_BCP_RFC9700_PKCE_METHOD).
        """
        return client_id in settings.OAUTH_PKCE_REQUIRED_CLIENTS

    # --- Authorization codes ---------------------------------------------------------------------

    def _create_authorization_code(
        self, request: Request, code: dict[str, str], expires: datetime | None = None
    ) -> AbstractGrant:
        # Only the digest is stored; the code itself exists in the redirect to the client.
        return super()._create_authorization_code(
            request, {**code, "code": token_digest(code["code"])}, expires
        )

    def validate_code(
        self,
        client_id: str,
        code: str,
        client: AbstractApplication,
        request: Request,
        *args: Any,
        **kwargs: Any,
    ) -> bool:
        digest = token_digest(code)
        # Locked until the token endpoint's transaction ends: a concurrent redemption of the same
        # code waits here, then finds the grant deleted and is treated as a replay.
        grant = (
            Grant.objects.select_for_update(of=("self",))  # not the joined user row
            .select_related("user")
            .filter(code=digest, application=client)
            .first()
        )
        if grant is None:
            redeemed = RedeemedCode.objects.filter(code_digest=digest).first()
            if redeemed is not None:
                revoked = services.connection_revoke(connection_id=redeemed.connection_id)
                logger.warning(
                    "authorization code replayed; its connection was revoked",
                    extra={"connection_id": str(redeemed.connection_id), "tokens": revoked},
                )
            return False
        if grant.is_expired() or not grant.user.is_active:
            return False
        request.grant = grant
        request.scopes = grant.scope.split()
        request.user = grant.user
        return True

    def get_code_challenge(self, code: str, request: Request) -> str | None:
        challenge: str = request.grant.code_challenge
        return challenge or None

    def get_code_challenge_method(self, code: str, request: Request) -> str | None:
        method: str = request.grant.code_challenge_method
        return method or None

    def confirm_redirect_uri(
        self,
        client_id: str,
        code: str,
        redirect_uri: str,
        client: AbstractApplication,
        request: Request,
        *args: Any,
        **kwargs: Any,
    ) -> bool:
        allowed: bool = request.grant.redirect_uri_allowed(redirect_uri)
        return allowed

    def invalidate_authorization_code(
        self, client_id: str, code: str, request: Request, *args: Any, **kwargs: Any
    ) -> None:
        deleted, _ = Grant.objects.filter(pk=request.grant.pk).delete()
        if not deleted:
            raise errors.InvalidGrantError(request=request)

    # --- Refresh tokens --------------------------------------------------------------------------

    def validate_refresh_token(
        self,
        refresh_token: str,
        client: AbstractApplication,
        request: Request,
        *args: Any,
        **kwargs: Any,
    ) -> bool:
        # Rows may share a checksum (unique together with revoked): prefer the live one.
        token = (
            RefreshToken.objects.filter(token_checksum=token_digest(refresh_token))
            .select_related("access_token", "user")
            .order_by(F("revoked").desc(nulls_first=True))
            .first()
        )
        # Bound to the client it was issued to; another client's token changes nothing.
        if token is None or token.application_id != client.pk or not token.user.is_active:
            return False
        if token.revoked is not None:
            if not self._in_grace_window(token):
                # Replayed after rotation (or used after revocation): the family is compromised.
                if oauth2_settings.REFRESH_TOKEN_REUSE_PROTECTION and token.token_family:
                    revoked = services.connection_revoke(connection_id=token.token_family)
                    logger.warning(
                        "refresh token replayed; its connection was revoked",
                        extra={"connection_id": str(token.token_family), "tokens": revoked},
                    )
                return False
        else:
            if token.access_token is None:
                return False  # an orphan: nothing to refresh against
            idle = refresh_token_expire_timedelta()
            if idle and token.access_token.expires + idle <= timezone.now():
                return False  # unused for longer than the idle lifetime
        request.user = token.user
        request.refresh_token = refresh_token
        request.refresh_token_instance = token
        return True

    def _in_grace_window(self, token: AbstractRefreshToken) -> bool:
        """Was ``token`` rotated (not revoked) moments ago, with its successor still alive?

        Rotation and deliberate revocation both stamp ``revoked``; only rotation leaves an access
        token whose ``source_refresh_token`` is this token, and that access token is deleted as
        soon as its own refresh token is rotated or revoked, or the family is revoked. So this
        honours only the immediately preceding token of a live family.
        """
        if token.token_family is None or token.revoked is None:
            return False
        window = timedelta(seconds=settings.OAUTH_REFRESH_GRACE_SECONDS)
        if timezone.now() - token.revoked >= window:
            return False
        successor_alive: bool = AccessToken.objects.filter(source_refresh_token=token).exists()
        return successor_alive

    # --- Issuing tokens --------------------------------------------------------------------------

    def _save_bearer_token(
        self, token: OAuth2Token, request: Request, *args: Any, **kwargs: Any
    ) -> None:
        """Store the pair the grant just generated (runs in DOT's ``save_bearer_token`` atomic)."""
        if "scope" not in token:
            raise FatalClientError("Failed to renew access token: missing scope")
        self._check_and_set_request_resource(request)  # RFC 8707 (no resources are registered)
        expires = timezone.now() + timedelta(
            seconds=token.get("expires_in", oauth2_settings.ACCESS_TOKEN_EXPIRE_SECONDS)
        )
        if request.grant_type == "authorization_code":
            connection = Connection.objects.create(user=request.user, application=request.client)
            RedeemedCode.objects.create(
                code_digest=token_digest(request.code), connection=connection
            )
            self._issue_pair(request, token, expires, family=connection.pk, source=None)
        elif request.grant_type == "refresh_token":
            self._rotate(request, token, expires)
        else:  # the server offers no other grant
            raise FatalClientError(f"unexpected grant type {request.grant_type!r}")

    def _rotate(self, request: Request, token: OAuth2Token, expires: datetime) -> None:
        presented: AbstractRefreshToken = request.refresh_token_instance
        family: uuid.UUID | None = presented.token_family
        if family is not None:
            # Every mint and revocation in a family takes this lock first (see services).
            list(Connection.objects.select_for_update().filter(pk=family).values_list("pk"))
        current = RefreshToken.objects.select_for_update().get(pk=presented.pk)
        source: AbstractRefreshToken | None
        if current.revoked is None:
            current.revoke()  # deletes its access token, stamps revoked
            source = current
        elif self._in_grace_window(current):
            # A parallel refresh of the token rotated moments ago (possibly while this request
            # waited for the lock): a new pair in the same family, the other pair untouched.
            source = None
            logger.info("parallel refresh within the grace window", extra={"family": str(family)})
        else:
            raise errors.InvalidGrantError(
                description="The refresh token was revoked.", request=request
            )
        self._issue_pair(request, token, expires, family=family, source=source)

    def _issue_pair(
        self,
        request: Request,
        token: OAuth2Token,
        expires: datetime,
        *,
        family: uuid.UUID | None,
        source: AbstractRefreshToken | None,
    ) -> None:
        access = self._create_access_token(expires, request, token, source_refresh_token=source)
        refresh = RefreshToken(
            user=request.user,
            application=request.client,
            access_token=access,
            token_family=family,
            resource=getattr(request, "resource", []),
        )
        set_token_value(refresh, token["refresh_token"])
        refresh.save()

    # --- RFC 7009 revocation ---------------------------------------------------------------------

    def revoke_token(
        self, token: str, token_type_hint: str | None, request: Request, *args: Any, **kwargs: Any
    ) -> None:
        # Scoped to the authenticated client (RFC 7009 §2.1); unknown tokens are a silent no-op.
        if getattr(request.client, "pk", None) is None:
            return
        services.token_revoke(token=token, application=request.client)
