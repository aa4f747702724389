"""What django-oauth-toolkit does not record: connections (token families) and redeemed codes.

DOT's own models (Application, Grant, AccessToken, RefreshToken) are kept as they are. A
``Connection`` is one authorization of one client by one owner: the authorization code grant
creates it, and every access/refresh token minted from it (by rotation or by the parallel-refresh
grace path) carries its id as ``RefreshToken.token_family``. It holds what the tokens cannot:
when the owner first connected (``/status`` ``created_at``, which must not move on every
rotation) and when the connection was last used.

``RedeemedCode`` links the digest of a used authorization code to the connection it created, so
that presenting the code again revokes that connection (RFC 6749 §4.1.2, §10.5). Rows are purged
by the cleanup task after ``RedeemedCode.RETENTION``.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, TypeAlias, TypedDict

from django.conf import settings
from django.db import models
from django.db.models import Exists, OuterRef
from oauth2_provider.models import AbstractAccessToken, get_refresh_token_model
from oauth2_provider.settings import oauth2_settings

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations  # a development dependency

    class _Active(TypedDict):
        active: bool

    # A connection as ``ConnectionQuerySet.with_active`` yields it.
    ConnectionWithActive: TypeAlias = WithAnnotations["Connection", _Active]


def token_digest(value: str) -> str:
    """SHA-256 hex digest: how codes and tokens are looked up without being stored."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


class ConnectionQuerySet(models.QuerySet["Connection"]):
    def with_active(self) -> models.QuerySet[ConnectionWithActive]:
        """Annotate ``active``: the connection still has a refresh token that is not revoked."""
        live = get_refresh_token_model().objects.filter(
            token_family=OuterRef("pk"), revoked__isnull=True
        )
        # Through the base type: django-stubs cannot match a custom QuerySet's own annotate()
        # to a declared WithAnnotations (typeddjango/django-stubs#1190).
        connections: models.QuerySet[Connection] = self
        return connections.annotate(active=Exists(live))

    def for_access_token(self, access_token: AbstractAccessToken) -> Connection | None:
        """The connection an access token belongs to (through its refresh token), if any."""
        family = get_refresh_token_model().objects.filter(access_token=access_token)
        return self.filter(pk__in=family.values("token_family")).first()


class Connection(models.Model):
    """One owner's authorization of one OAuth client: the family of tokens it produced."""

    # The same value as RefreshToken.token_family of every token in the family.
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(  # indexed by oauth_connection_user_app (user, application)
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="oauth_connections",
        db_index=False,
    )
    application = models.ForeignKey(
        oauth2_settings.APPLICATION_MODEL,
        on_delete=models.CASCADE,
        related_name="connections",
    )
    created_at = models.DateTimeField(
        auto_now_add=True, help_text="When the owner approved the client (the first token)."
    )
    last_used_at = models.DateTimeField(
        null=True, blank=True, help_text="Last API request with one of its tokens (±1 s)."
    )

    objects = ConnectionQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["user", "application"], name="oauth_connection_user_app")]

    def __str__(self) -> str:
        return f"{self.application} for {self.user}"


class RedeemedCode(models.Model):
    """A used authorization code (by digest) and the connection it was exchanged for."""

    # Replays come within seconds or minutes of the first use; a day is ample.
    RETENTION = timedelta(days=1)

    code_digest = models.CharField(max_length=64, primary_key=True)
    connection = models.ForeignKey(
        Connection, on_delete=models.CASCADE, related_name="redeemed_codes"
    )
    redeemed_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        return f"Code redeemed at {self.redeemed_at:%Y-%m-%d %H:%M:%S}"
