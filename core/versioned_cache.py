"""Read-through cache entries that a writer invalidates safely, even against concurrent readers.

Deleting an entry on change is not enough: a reader that loaded the old row just before the
writer committed can put it back just after. So every entry has a *generation* key next to it:

* ``read`` gets the entry and its generation in one round trip, and returns the value only if
  it was written under the current generation;
* a miss loads from the database and ``write``\\ s the value tagged with the generation that
  ``read`` saw *before* the load;
* ``invalidate`` sets a new random generation and deletes the entry, once at once and once more
  right after the surrounding transaction commits. An entry loaded from the old row carries an
  old generation, so it is never served once the change is visible to anyone.

Generations outlive the entries (``2 * ttl + 60`` s), so an expired generation key can never
make an old entry valid again. Every function here swallows cache errors: a failing cache means
reads go to the database; a failed invalidation is logged, and entries then live at most their
TTL. Used by ``oauth_provider.token_cache`` (bearer tokens) and ``BusinessSettings.for_owner``.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, transaction
from django.db.models import Model

logger = logging.getLogger(__name__)

_M = TypeVar("_M", bound=Model)


def _generation_key(key: str) -> str:
    return f"{key}:gen"


@dataclass(frozen=True)
class Read:
    key: str
    value: Any  # None: a miss
    generation: str | None
    usable: bool  # False: the cache failed; neither trust it nor write to it


def read(key: str) -> Read:
    try:
        found = cache.get_many([key, _generation_key(key)])
    except Exception:  # any backend failure: the caller reads the database
        logger.warning("cache unavailable; reading from the database", extra={"key": key})
        return Read(key, None, None, usable=False)
    generation = found.get(_generation_key(key))
    entry = found.get(key)
    if not isinstance(entry, dict) or entry.get("generation") != generation:
        return Read(key, None, generation, usable=True)
    return Read(key, entry["value"], generation, usable=True)


def write(state: Read, value: Any, *, timeout: int) -> None:
    """Cache ``value`` (loaded after ``state`` was read) under the generation ``state`` saw."""
    if not state.usable or timeout <= 0:
        return
    try:
        cache.set(state.key, {"generation": state.generation, "value": value}, timeout=timeout)
    except Exception:
        logger.warning("cache unavailable; value not cached", extra={"key": state.key})


def invalidate(keys: Iterable[str], *, ttl: int) -> None:
    """Make ``read`` miss for these keys from now on, and again once the transaction commits.

    ``ttl``: the longest timeout any of these entries is written with.
    """
    keys = list(dict.fromkeys(keys))
    if not keys:
        return
    _bump(keys, ttl)
    # Outside a transaction this runs at once (a harmless second bump).
    transaction.on_commit(lambda: _bump(keys, ttl))


def _bump(keys: list[str], ttl: int) -> None:
    try:
        cache.set_many(
            {_generation_key(key): secrets.token_hex(8) for key in keys}, timeout=2 * ttl + 60
        )
        cache.delete_many(keys)
    except Exception:
        logger.error(
            "cache invalidation failed; entries expire within their TTL",
            extra={"keys": len(keys), "ttl": ttl},
            exc_info=True,
        )


def model_values(instance: Model, excluded: frozenset[str] = frozenset()) -> dict[str, Any]:
    """A model instance's column values by attribute name: what a cache entry holds."""
    return {
        field.attname: getattr(instance, field.attname)
        for field in instance._meta.concrete_fields
        if field.attname not in excluded
    }


def model_from_values(model: type[_M], values: dict[str, Any]) -> _M:
    """A model instance as if loaded from the database; fields not given stay deferred."""
    return model.from_db(DEFAULT_DB_ALIAS, list(values), list(values.values()))
