"""A cache of bearer-token lookups that a revocation invalidates before its response is sent.

django-oauth-toolkit reads the access token and its owner from the database on every API request
(one query; what this cache gains: docs/benchmarks.md, Optimisations kept).
This module keeps what authentication needs in the cache (Redis in production), keyed by the
token's SHA-256 digest: the token row (id, owner, client, scope, expiry, creation) and the
owner's row without its password hash. Nothing secret is stored: the digest is the key, and the
raw token is never written anywhere.

Revocation safety comes from a *generation* per token digest (``core.versioned_cache``), not
from deleting entries alone: a lookup reads the entry and the token's generation in one round
trip and uses the entry only if it was written under the current generation; any change that
can end or alter a token's validity (the access token row deleted or saved: revocation,
rotation, disconnection, expiry cleanup, admin edits; its owner saved: deactivation, profile
changes) bumps the generation and deletes the entry, at once and again right after the
transaction commits (``invalidate_tokens``, called by ``receivers``). A request that read the
database before the revoking transaction committed may still write its entry after the bump,
but under the old generation, so it is never served: from the first request after a
revocation's response, the token is refused.

Entries live at most ``OAUTH_TOKEN_CACHE_SECONDS`` (and never past the token's expiry);
generations outlive them. ``OAUTH_TOKEN_CACHE_SECONDS=0`` turns the cache off. If the cache is
unreachable, lookups go to the database (the cache is never needed for a correct answer), and a
failed invalidation is logged: entries written before it then live at most their TTL.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.utils import timezone
from oauth2_provider.models import AbstractAccessToken, get_access_token_model

from core import versioned_cache

from .models import token_digest

AccessToken = get_access_token_model()

# Never cached (left deferred: loaded on access if anything ever needs them): the owner's
# password hash, and the token column (blank under hashed storage; the raw token otherwise).
_USER_EXCLUDED = frozenset({"password"})
_TOKEN_EXCLUDED = frozenset({"token"})


def ttl_seconds() -> int:
    return max(0, int(settings.OAUTH_TOKEN_CACHE_SECONDS))


def _key(digest: str) -> str:
    return f"oauth:token:{digest}"


class Lookup:
    """One token's cache state, read once per request (``lookup``)."""

    def __init__(self, digest: str, read: versioned_cache.Read | None) -> None:
        self.digest = digest
        self.read = read  # None: the cache is off


def lookup(raw_token: str) -> tuple[Lookup, tuple[AbstractBaseUser, AbstractAccessToken] | None]:
    """``(state, (user, access_token))`` from the cache, or ``(state, None)`` on a miss.

    A hit is a token that was valid when cached and has not been invalidated since; its expiry
    is checked again here. Never raises.
    """
    digest = token_digest(raw_token)
    if ttl_seconds() == 0:
        return Lookup(digest, None), None
    read = versioned_cache.read(_key(digest))
    state = Lookup(digest, read)
    if read.value is None:
        return state, None
    access_token = versioned_cache.model_from_values(AccessToken, read.value["token"])
    if access_token.is_expired():
        return state, None
    user = versioned_cache.model_from_values(get_user_model(), read.value["user"])
    access_token._state.fields_cache["user"] = user
    return state, (user, access_token)


def store(state: Lookup, user: AbstractBaseUser, access_token: AbstractAccessToken) -> None:
    """Cache a token just validated against the database, under the generation ``lookup`` saw.

    Tokens restricted to a resource (RFC 8707) are not cached: their audience check depends on
    the request, and DOT's own path handles it.
    """
    if state.read is None or getattr(access_token, "resource", None):
        return
    if access_token.token_checksum != state.digest:
        return  # parsed differently from DOT's header parsing: cache nothing
    remaining = int((access_token.expires - timezone.now()).total_seconds())
    value = {
        "token": versioned_cache.model_values(access_token, _TOKEN_EXCLUDED),
        "user": versioned_cache.model_values(user, _USER_EXCLUDED),
    }
    versioned_cache.write(state.read, value, timeout=min(ttl_seconds(), remaining))


def invalidate_tokens(digests: Iterable[str]) -> None:
    """Make cached lookups of these tokens (by digest) miss, now and again after commit."""
    if ttl_seconds():
        versioned_cache.invalidate([_key(d) for d in digests if d], ttl=ttl_seconds())


def invalidate_user(user_id: Any) -> None:
    """Invalidate every unexpired access token of one owner (deactivation, profile changes)."""
    if not ttl_seconds():
        return
    digests = AccessToken.objects.filter(
        user_id=user_id, expires__gt=timezone.now() - timedelta(seconds=1)
    ).values_list("token_checksum", flat=True)
    invalidate_tokens(list(digests))
