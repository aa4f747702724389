"""Django's Redis cache backend, reusing its ``redis.Redis`` client.

Django's ``RedisCacheClient.get_client`` builds a new ``redis.Redis`` object around the same
connection pool for every cache call; the constructor's work (options, callbacks, retry
objects) showed up in the API's profile on every request. One client per pool does the same
thing (a ``redis.Redis`` is thread-safe; connections come from the pool either way).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient
from redis import ConnectionPool, Redis


class ReusingRedisCacheClient(RedisCacheClient):
    # Set by ``RedisCacheClient.__init__``; django-stubs declares only the public methods.
    _servers: list[str]
    _pools: dict[int, ConnectionPool]
    _pool_class: type[ConnectionPool]
    _pool_options: dict[str, Any]
    _client: type[Redis]
    _get_connection_pool_index: Callable[[bool], int]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Redis] = {}

    def get_client(
        self, key: str | bytes | memoryview | None = None, *, write: bool = False
    ) -> Redis:
        index = self._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            if index not in self._pools:
                self._pools[index] = self._pool_class.from_url(
                    self._servers[index], **self._pool_options
                )
            client = self._clients[index] = self._client(connection_pool=self._pools[index])
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server: str | list[str], params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = ReusingRedisCacheClient
