"""Model signals → token-cache invalidation (connected in ``apps.ready``).

Signals, not calls in each service, because access tokens are deleted and changed in many
places that are not ours: django-oauth-toolkit's ``revoke()`` and rotation, ``clear_expired``,
the admin, cascades from a deleted user or client. Every one of them sends these signals
(Django fetches rows and signals each delete when a receiver is connected), so none can leave a
revoked token in the cache.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils import timezone
from oauth2_provider.models import AbstractAccessToken, get_access_token_model

from . import token_cache

AccessToken = get_access_token_model()


@receiver(post_save, sender=AccessToken, dispatch_uid="token_cache_access_token_saved")
@receiver(post_delete, sender=AccessToken, dispatch_uid="token_cache_access_token_deleted")
def _access_token_changed(
    sender: type[AbstractAccessToken],
    instance: AbstractAccessToken,
    created: bool = False,
    **kwargs: Any,
) -> None:
    if created:
        return  # nothing can be cached for a token that did not exist
    if instance.expires is not None and instance.expires <= timezone.now():
        return  # expired: no entry outlives its token's expiry (expiry cleanup deletes many)
    token_cache.invalidate_tokens([instance.token_checksum])


@receiver(post_save, sender=get_user_model(), dispatch_uid="token_cache_user_saved")
def _user_saved(
    sender: type[AbstractBaseUser],
    instance: AbstractBaseUser,
    created: bool,
    update_fields: Iterable[str] | None = None,
    **kwargs: Any,
) -> None:
    if created or (update_fields is not None and set(update_fields) <= {"last_login"}):
        return  # a login changes nothing a cached token carries that matters
    token_cache.invalidate_user(instance.pk)
