"""OAuth workflows: registering clients and rotating their secrets (for the command and the
admin alike), revoking connections, recording use, cleanup.

Lock order, everywhere a connection's tokens change: the ``Connection`` row first, then refresh
tokens, then access tokens. Token rotation and the parallel-refresh grace path
(``validators.OAuth2Validator``) take the same order, so revocation and minting in one family are
serialised and cannot deadlock.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.hashers import check_password, identify_hasher, make_password
from django.core.cache import cache
from django.db import transaction
from django.db.models import Subquery
from django.utils import timezone
from django.utils.crypto import constant_time_compare
from oauth2_provider.generators import generate_client_secret
from oauth2_provider.models import (
    AbstractAccessToken,
    AbstractApplication,
    AbstractRefreshToken,
    clear_expired,
    get_access_token_model,
    get_application_model,
    get_refresh_token_model,
)
from oauth2_provider.settings import oauth2_settings

from core.db import delete_in_batches

from .models import Connection, RedeemedCode, token_digest

logger = logging.getLogger(__name__)

AccessToken = get_access_token_model()
Application = get_application_model()
RefreshToken = get_refresh_token_model()

# Recording use writes at most once per access token per this many seconds.
TOUCH_INTERVAL_SECONDS = 1


def oauth_client_create(
    *,
    name: str,
    redirect_uris: list[str],
    client_id: str = "",
    client_type: str = Application.CLIENT_CONFIDENTIAL,
    user: AbstractBaseUser | None = None,
) -> tuple[AbstractApplication, str]:
    """Register an authorization-code client (a platform's app; confidential unless
    ``client_type`` says otherwise) and return it with its generated secret, the only time the
    cleartext exists (a hash is stored). ``client_id`` empty: generated; ``user``: the staff
    member who owns it, if any. ``ValidationError`` (nothing saved) for a taken id or a
    redirect URI the provider would refuse (``https`` only, exact). ``create_oauth_client`` and
    the admin's add page both create clients here."""
    secret = generate_client_secret()
    application = Application(
        name=name,
        client_type=client_type,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=" ".join(redirect_uris),
        client_secret=secret,
        hash_client_secret=True,
        user=user,
    )
    if client_id:
        application.client_id = client_id
    application.full_clean()
    application.save()
    return application, secret


def oauth_client_secret_rotate(*, application: AbstractApplication) -> str:
    """Give the client a new generated secret (the old one stops working at once) and return
    it, the only time its cleartext exists (a hash is stored)."""
    secret: str = generate_client_secret()
    application.client_secret = secret
    application.hash_client_secret = True
    application.save(update_fields=["client_secret", "hash_client_secret", "updated"])
    return secret


def connection_revoke(*, connection_id: uuid.UUID) -> int:
    """Revoke every live token of one connection; return how many tokens that revoked.

    Refresh tokens are marked revoked (kept as tombstones: reuse detection needs them) and access
    tokens are deleted, as django-oauth-toolkit does. Idempotent: a second call returns 0.
    """
    with transaction.atomic():
        # Serialises with rotation and the grace path, which lock the same row first.
        list(Connection.objects.select_for_update().filter(pk=connection_id).values_list("pk"))
        now = timezone.now()
        live = RefreshToken.objects.filter(token_family=connection_id, revoked__isnull=True)
        access_ids = [pk for pk in live.values_list("access_token_id", flat=True) if pk]
        refresh_count: int = live.update(revoked=now, updated=now)
        deleted: dict[str, int]
        _, deleted = AccessToken.objects.filter(pk__in=access_ids).delete()
        access_count = deleted.get(AccessToken._meta.label, 0)
    if refresh_count or access_count:
        logger.info(
            "oauth connection revoked",
            extra={"connection_id": str(connection_id), "tokens": refresh_count + access_count},
        )
    return refresh_count + access_count


def token_connection_revoke(
    *,
    refresh_token: AbstractRefreshToken | None = None,
    access_token: AbstractAccessToken | None = None,
) -> int:
    """Revoke the connection one token belongs to; return how many tokens that revoked.

    Pass the refresh token, or the access token (its refresh token is found). A token minted
    outside any connection (no token family) is revoked together with its pair only.
    """
    if refresh_token is None:
        if access_token is None:
            raise TypeError("token_connection_revoke needs refresh_token or access_token")
        refresh_token = RefreshToken.objects.filter(access_token=access_token).first()
        if refresh_token is None:
            access_token.revoke()
            return 1
    if refresh_token.token_family is not None:
        return connection_revoke(connection_id=refresh_token.token_family)
    count = (refresh_token.revoked is None) + (refresh_token.access_token_id is not None)
    refresh_token.revoke()  # also deletes its access token
    return count


def token_revoke(
    *, token: str, application: AbstractApplication, user: AbstractBaseUser | None = None
) -> int:
    """Revoke the connection of one live access or refresh token issued to ``application``.

    With ``user``, only that owner's tokens match: anyone else's token revokes nothing. Returns
    how many tokens were revoked (0 for an unknown, foreign or already revoked token). Revoking
    any token of a connection ends the whole connection: its access and refresh token and any
    pair minted by a parallel refresh.
    """
    digest = token_digest(token)
    owner = {"user": user} if user is not None else {}
    access = AccessToken.objects.filter(
        token_checksum=digest, application=application, **owner
    ).first()
    if access is not None:
        return token_connection_revoke(access_token=access)
    refresh = RefreshToken.objects.filter(
        token_checksum=digest, application=application, revoked__isnull=True, **owner
    ).first()
    if refresh is None:
        return 0
    return token_connection_revoke(refresh_token=refresh)


def user_tokens_revoke(*, user: AbstractBaseUser, application: AbstractApplication) -> int:
    """Disconnect ``application`` from ``user``: revoke every live token; return the count."""
    live = RefreshToken.objects.filter(user=user, application=application, revoked__isnull=True)
    count = 0
    for family in set(live.exclude(token_family=None).values_list("token_family", flat=True)):
        count += connection_revoke(connection_id=family)
    for refresh in live.filter(token_family=None):
        count += token_connection_revoke(refresh_token=refresh)
    return count


def touch_gate_key(access_token: AbstractAccessToken) -> str:
    # The checksum, not the pk: unique per token even where ids get reused (test rollbacks).
    return f"oauth:touch:{access_token.token_checksum}"


# Process-local first gate: token digest → monotonic time of this process's last touch.
_touched: dict[str, float] = {}
_touched_lock = threading.Lock()
_TOUCHED_MAX = 10_000  # tokens remembered per process before the map is cleared


def _touched_recently(digest: str) -> bool:
    """True if this process recorded a use of the token less than the interval ago; else
    remember now. Spares the cache round trip on nearly every request of a busy token."""
    now = time.monotonic()
    with _touched_lock:
        last = _touched.get(digest)
        if last is not None and now - last < TOUCH_INTERVAL_SECONDS:
            return True
        if len(_touched) >= _TOUCHED_MAX:
            _touched.clear()
        _touched[digest] = now
    return False


def connection_touch(*, access_token: AbstractAccessToken) -> None:
    """Record that ``access_token`` was just used, in one indexed UPDATE of its connection.

    Gated to one write per token per second: first per process (no I/O), then across processes
    through the cache; if the cache is down that gate fails open (the write happens), so
    ``last_used_at`` never goes stale because of it.
    """
    if _touched_recently(access_token.token_checksum):
        return
    try:
        first = cache.add(touch_gate_key(access_token), 1, timeout=TOUCH_INTERVAL_SECONDS)
    except Exception:  # any cache backend failure: fail open
        logger.warning("cache unavailable; recording OAuth token use without the gate")
        first = True
    if not first:
        return  # written less than a second ago
    family = RefreshToken.objects.filter(access_token_id=access_token.pk).values("token_family")
    Connection.objects.filter(pk=Subquery(family[:1])).update(last_used_at=timezone.now())


def tokens_clear_expired() -> dict[str, int]:
    """Delete expired tokens and grants (DOT's ``clear_expired``) and our own stale records.

    Connections whose tokens are all gone and redeemed-code records older than
    ``RedeemedCode.RETENTION`` are deleted. Idempotent; safe to run concurrently.
    """
    clear_expired()
    cutoff = timezone.now() - RedeemedCode.RETENTION
    _, codes = delete_in_batches(RedeemedCode.objects.filter(redeemed_at__lt=cutoff))
    has_tokens = RefreshToken.objects.filter(token_family__isnull=False).values("token_family")
    # A connection and its first tokens are created in one transaction, so one without tokens
    # had them all expire and be deleted above: nothing is left to track.
    _, connections = delete_in_batches(Connection.objects.exclude(pk__in=has_tokens))
    result = {
        "redeemed_codes": codes.get(RedeemedCode._meta.label, 0),
        "connections": connections.get(Connection._meta.label, 0),
    }
    logger.info("oauth cleanup done", extra=result)
    return result


def client_secret_matches(*, client_id: str, secret: str) -> bool:
    """Whether ``secret`` is the secret of the client ``client_id`` (hashed, or stored in clear
    as ``hash_client_secret=False`` leaves it), as django-oauth-toolkit checks it."""
    stored = (
        Application.objects.filter(client_id=client_id)
        .values_list("client_secret", flat=True)
        .first()
    )
    if not stored:
        return False
    try:
        identify_hasher(stored)
    except ValueError:
        return constant_time_compare(secret, stored)
    return check_password(secret, stored)


def client_secret_rehash(*, application: AbstractApplication, presented: list[str]) -> bool:
    """Re-hash an authenticated client's stored secret with ``CLIENT_SECRET_HASHER`` if it is
    stored under another hasher (PBKDF2, from before the fast hash) or an old ``SECRET_KEY``.

    ``presented`` are the secrets the request carried (HTTP Basic, form body); the one that
    matches the stored hash is re-hashed. Costs one more check under the old hasher, once per
    client. Returns whether the hash was replaced. A secret stored in clear (an application saved
    with ``hash_client_secret=False``) is left as the operator chose.
    """
    stored = application.client_secret
    try:
        hasher = identify_hasher(stored)
    except ValueError:
        return False
    preferred = oauth2_settings.CLIENT_SECRET_HASHER
    if hasher.algorithm == preferred and not hasher.must_update(stored):
        return False

    def replace(secret: str) -> None:
        new = make_password(secret, hasher=preferred)
        # Only if nobody rotated the secret meanwhile.
        Application.objects.filter(pk=application.pk, client_secret=stored).update(
            client_secret=new
        )
        application.client_secret = new

    for secret in presented:
        if check_password(secret, stored, setter=replace, preferred=preferred):
            logger.info(
                "client secret re-hashed",
                extra={"client_id": application.client_id, "previous": hasher.algorithm},
            )
            return True
    return False
