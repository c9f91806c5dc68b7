"""What the result-cache tests share (``test_cache.py``, ``test_job_lease.py``): the Redis they run on, a cache
backend on it, a query's result, and the query handed to the runner. Their fixtures ``redis_prefix`` and
``backend`` are in this folder's ``conftest.py``."""

from __future__ import annotations

import os
import threading

import pytest
from django.core.cache.backends.redis import RedisCache

from embedadmin.semantic.serving.cache import QueryRunner
from embedadmin.semantic.sources.base import QueryResult

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def rows(n: int) -> QueryResult:
    return QueryResult(columns=["n"], types=["integer"], rows=[(n,)])


def redis_backend(prefix: str) -> RedisCache:
    return RedisCache(REDIS_URL, {"KEY_PREFIX": prefix})


class Query:
    """The unit of work handed to the runner: counts its runs, returns ``value`` (by default the run number) or
    raises ``error``, and can be held at a gate to play a slow query."""

    def __init__(self, *, gated: bool = False, value: int | None = None, error: Exception | None = None) -> None:
        self.calls = 0
        self.value = value
        self.error = error
        self.gate = threading.Event()
        self.started = threading.Event()
        if not gated:
            self.gate.set()

    def __call__(self) -> QueryResult:
        self.calls += 1
        self.started.set()
        assert self.gate.wait(15), "the test never opened the gate"
        if self.error is not None:
            raise self.error
        return rows(self.calls if self.value is None else self.value)


def counted_waits(runner: QueryRunner, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each request that starts waiting on a job of ``runner`` (its own, or another process's) appends the job's id:
    a test waits on this list, not for a guessed time, before it lets the job end."""
    waits: list[str] = []
    original = runner._await

    def counted(key: str, job_id: str, *rest):
        waits.append(job_id)
        return original(key, job_id, *rest)

    monkeypatch.setattr(runner, "_await", counted)
    return waits
