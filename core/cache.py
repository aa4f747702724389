"""Django's Redis cache backend, reusing its ``redis.Redis`` client.

Django's ``RedisCacheClient.get_client`` builds a new ``redis.Redis`` object around the same
connection pool for every cache call; the constructor's work (options, callbacks, retry
objects) showed up in the API's profile on every request. One client per pool does the same
thing (a ``redis.Redis`` is thread-safe; connections come from the pool either way).
"""

from __future__ import annotations

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


class ReusingRedisCacheClient(RedisCacheClient):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, object] = {}

    def get_client(self, key=None, *, write=False):
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
    def __init__(self, server, params) -> None:
        super().__init__(server, params)
        self._class = ReusingRedisCacheClient
