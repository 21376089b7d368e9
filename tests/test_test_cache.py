"""The suite's Redis cache clears its own keys, not the database it shares (tests/cache.py)."""

from __future__ import annotations

import uuid

import pytest
from django.core.cache import caches

from tests.cache import PrefixedRedisCache


@pytest.mark.redis
def test_clearing_deletes_only_the_keys_under_its_prefix(settings):
    location = "redis://127.0.0.1:6379/13"
    settings.CACHES = {
        name: {"BACKEND": "tests.cache.PrefixedRedisCache", "LOCATION": location, "KEY_PREFIX": uuid.uuid4().hex}
        for name in ("default", "other")
    }
    mine, other = caches["default"], caches["other"]
    mine.set("count", 1)
    other.set("count", 2)
    client = mine._cache.get_client(None, write=True)
    client.set("not-a-cache-key", "kept")
    try:
        mine.clear()
        assert mine.get("count") is None and other.get("count") == 2 and client.get("not-a-cache-key") == b"kept"
    finally:
        other.clear()
        client.delete("not-a-cache-key")


def test_a_cache_without_a_prefix_refuses_to_clear():
    cache = PrefixedRedisCache("redis://127.0.0.1:6379/13", {})
    with pytest.raises(ValueError, match="needs a KEY_PREFIX"):
        cache.clear()
