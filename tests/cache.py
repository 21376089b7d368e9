"""The cache of the test processes on Redis: ``clear`` deletes this process's keys only.

The suite's processes (pytest-xdist) share one Redis database, with each other and with the Celery
queues of the worker tests. Django's ``RedisCache.clear`` empties the whole database (FLUSHDB): one
process's clear between two tests wiped the other's throttle and login counts mid-test, and could
wipe a queued task. Each process gets a key prefix of its own (``tests/conftest.py``), and clearing
deletes the keys under it.
"""

from __future__ import annotations

from django.core.cache.backends.redis import RedisCache


class PrefixedRedisCache(RedisCache):
    def clear(self) -> bool:
        if not self.key_prefix:
            raise ValueError("PrefixedRedisCache needs a KEY_PREFIX: clearing without one would empty the database")
        client = self._cache.get_client(None, write=True)
        keys = list(client.scan_iter(match=f"{self.key_prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
        return True
