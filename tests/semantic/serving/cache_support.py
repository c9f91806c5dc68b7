"""What the result-cache tests share (``test_cache.py``, ``test_job_lease.py``): the Redis they run on, a cache
backend on it, and a query's result. Their fixtures ``redis_prefix`` and ``backend`` are in this folder's
``conftest.py``."""

from __future__ import annotations

import os

from django.core.cache.backends.redis import RedisCache

from embedadmin.semantic.serving.datasources import QueryResult

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def rows(n: int) -> QueryResult:
    return QueryResult(columns=["n"], types=["integer"], rows=[(n,)])


def redis_backend(prefix: str) -> RedisCache:
    return RedisCache(REDIS_URL, {"KEY_PREFIX": prefix})
