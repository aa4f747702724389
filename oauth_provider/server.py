"""The oauthlib server: the authorization code and refresh token grants, nothing else.

oauthlib's pre-configured ``Server`` also wires the implicit, password, client credentials and
device grants; even when the validator refuses them for our clients they answer
``unauthorized_client`` instead of ``unsupported_grant_type``. This server only knows the two
grants we offer, and the grant classes add what oauthlib leaves to the provider:

* PKCE is optional (unless ``OAUTH_PKCE_REQUIRED_CLIENTS`` lists the client), ``S256`` only, with
  syntax checks on the challenge and the verifier (RFC 7636 §4.1-4.2) and downgrade protection:
  a ``code_verifier`` for a code issued without a challenge is refused (RFC 9700 §4.8.2);
* every token-side failure about the code (missing or wrong verifier, wrong ``redirect_uri``) is
  ``invalid_grant`` (RFC 6749 §5.2), not oauthlib's ``invalid_request``;
* ``grant_type`` must be exactly ``authorization_code`` or ``refresh_token``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from oauthlib.common import Request
from oauthlib.oauth2.rfc6749 import errors
from oauthlib.oauth2.rfc6749.endpoints import (
    AuthorizationEndpoint,
    ResourceEndpoint,
    RevocationEndpoint,
    TokenEndpoint,
)
from oauthlib.oauth2.rfc6749.grant_types import authorization_code, refresh_token
from oauthlib.oauth2.rfc6749.request_validator import RequestValidator
from oauthlib.oauth2.rfc6749.tokens import BearerToken

# RFC 7636 §4.2: an S256 challenge is BASE64URL(SHA256(verifier)) without padding: 43 characters.
CODE_CHALLENGE_S256 = re.compile(r"[A-Za-z0-9_-]{43}")
# RFC 7636 §4.1: code_verifier = 43*128unreserved.
CODE_VERIFIER = re.compile(r"[A-Za-z0-9._~-]{43,128}")


# Generates an access or refresh token for a request (oauthlib's token generator signature).
TokenGenerator = Callable[[Request], str]


class AuthorizationCodeGrant(authorization_code.AuthorizationCodeGrant):  # type: ignore[misc]  # oauthlib ships no types
    # Without code_challenge_method oauthlib assumes "plain" (RFC 7636 §4.3); it is refused too.
    _code_challenge_methods = {"S256": authorization_code.code_challenge_method_s256}

    def __init__(self, request_validator: RequestValidator | None = None, **kwargs: Any) -> None:
        super().__init__(request_validator, **kwargs)
        # Runs once client_id and redirect_uri are known good, so its error is redirected.
        self.custom_validators.pre_auth.append(self._only_code_response_type)

    @staticmethod
    def _only_code_response_type(request: Request) -> dict[str, object]:
        # oauthlib accepts any response_type containing "code" (OpenID hybrids) and then asks
        # whether the client may use it; there is only one here.
        if request.response_type is not None and request.response_type != "code":
            raise errors.UnsupportedResponseTypeError(request=request)
        return {}

    def validate_authorization_request(self, request: Request) -> tuple[list[str], dict[str, Any]]:
        scopes: list[str]
        info: dict[str, Any]  # oauthlib's credentials: client_id, redirect_uri, state, request...
        scopes, info = super().validate_authorization_request(request)
        if request.code_challenge is not None:
            if not CODE_CHALLENGE_S256.fullmatch(request.code_challenge):
                raise errors.InvalidRequestError(
                    description="code_challenge must be 43 base64url characters (S256).",
                    request=request,
                )
        elif request.code_challenge_method is not None:
            raise errors.InvalidRequestError(
                description="code_challenge_method was sent without a code_challenge.",
                request=request,
            )
        return scopes, info

    def validate_token_request(self, request: Request) -> None:
        if not request.grant_type:
            raise errors.InvalidRequestError(description="Missing grant_type.", request=request)
        if request.grant_type != "authorization_code":
            raise errors.UnsupportedGrantTypeError(request=request)
        try:
            super().validate_token_request(request)
        except errors.MissingCodeVerifierError as exc:
            raise errors.InvalidGrantError(
                description="This code was issued with a PKCE challenge: send its code_verifier.",
                request=request,
            ) from exc
        except errors.MismatchingRedirectURIError as exc:
            raise errors.InvalidGrantError(
                description="redirect_uri differs from the one in the authorization request.",
                request=request,
            ) from exc
        # The validator put the locked grant on the request (OAuth2Validator.validate_code).
        if request.grant.code_challenge:
            if not CODE_VERIFIER.fullmatch(request.code_verifier):
                raise errors.InvalidGrantError(
                    description="code_verifier must be 43 to 128 characters of [A-Za-z0-9-._~].",
                    request=request,
                )
        elif request.code_verifier is not None:
            raise errors.InvalidGrantError(
                description="This code was issued without a PKCE challenge: "
                "a code_verifier is not accepted for it.",
                request=request,
            )


class RefreshTokenGrant(refresh_token.RefreshTokenGrant):  # type: ignore[misc]  # oauthlib ships no types
    def validate_token_request(self, request: Request) -> None:
        if request.grant_type != "refresh_token":
            raise errors.UnsupportedGrantTypeError(request=request)
        super().validate_token_request(request)


class Server(AuthorizationEndpoint, TokenEndpoint, ResourceEndpoint, RevocationEndpoint):  # type: ignore[misc]  # oauthlib ships no types
    """Authorization code + refresh token grants, Bearer tokens, RFC 7009 revocation."""

    def __init__(
        self,
        request_validator: RequestValidator,
        token_expires_in: int | Callable[[Request], int] | None = None,
        token_generator: TokenGenerator | None = None,
        refresh_token_generator: TokenGenerator | None = None,
        **kwargs: Any,  # django-oauth-toolkit also passes device-flow settings; no device grant
    ) -> None:
        self.auth_grant = AuthorizationCodeGrant(request_validator)
        self.refresh_grant = RefreshTokenGrant(request_validator)
        self.bearer = BearerToken(
            request_validator, token_generator, token_expires_in, refresh_token_generator
        )
        AuthorizationEndpoint.__init__(
            self,
            default_response_type="code",
            response_types={"code": self.auth_grant},
            default_token_type=self.bearer,
        )
        TokenEndpoint.__init__(
            self,
            default_grant_type="authorization_code",
            grant_types={
                "authorization_code": self.auth_grant,
                "refresh_token": self.refresh_grant,
            },
            default_token_type=self.bearer,
        )
        ResourceEndpoint.__init__(self, default_token="Bearer", token_types={"Bearer": self.bearer})
        RevocationEndpoint.__init__(self, request_validator)
