"""A cache backend that is down: every call raises, as a dead Redis does."""

from __future__ import annotations


class DownCache:
    def __getattr__(self, name):
        def fail(*args, **kwargs):
            raise ConnectionError("cache unreachable")

        return fail
