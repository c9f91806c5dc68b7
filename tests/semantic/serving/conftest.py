"""Fixtures of the result-cache tests (``test_cache.py``, ``test_job_lease.py``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
from django.core.cache import BaseCache
from django.core.cache.backends.locmem import LocMemCache

from tests.semantic.serving.cache_support import REDIS_URL, redis_backend


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    """A key prefix of this test's own on the test Redis; its keys are deleted afterwards."""
    prefix = f"test-cache-{uuid.uuid4().hex[:10]}"
    yield prefix
    client = redis.Redis.from_url(REDIS_URL)
    for key in client.scan_iter(match=f"{prefix}:*"):
        client.delete(key)


@pytest.fixture(params=["locmem", "redis"])
def backend(request, redis_prefix) -> BaseCache:
    """Each cache backend in turn: a fresh local-memory one, and Redis under ``redis_prefix``."""
    if request.param == "locmem":
        return LocMemCache(f"test-{uuid.uuid4().hex}", {})
    return redis_backend(redis_prefix)
