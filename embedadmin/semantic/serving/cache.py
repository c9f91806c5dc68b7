"""Cached query results, Cube's cache modes, and queries that outlive their request ("Continue wait").

Results, the job registry that lets a repeated request re-attach to a running query, and each result's stamp
(when it was read, which kept answers check) live in Django's cache, so with Redis they span processes. The
modes and the registry are described in ``docs/core-data-api.md`` ("Result cache and Continue wait").
"""

from __future__ import annotations

import copy
import enum
import hashlib
import json
import logging
import math
import pickle
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import BaseCache

from embedadmin.core.versions import thread_cache
from embedadmin.semantic.serving.datasources import DataSourceError, QueryResult

logger = logging.getLogger(__name__)


class CacheMode(enum.StrEnum):
    """Cube's ``cache`` request parameter."""

    STALE_IF_SLOW = "stale-if-slow"
    STALE_WHILE_REVALIDATE = "stale-while-revalidate"
    MUST_REVALIDATE = "must-revalidate"
    NO_CACHE = "no-cache"


class ContinueWait(Exception):
    """The query is still running; the client should repeat the request (Cube answers HTTP 200)."""

    def __init__(self) -> None:
        super().__init__("Continue wait")


@dataclass(frozen=True)
class CachedResult:
    """Rows for a request: when they were read from the data source, and how the request got them."""

    result: QueryResult
    refreshed_at: float  # Unix time the rows were read: Cube's lastRefreshTime
    from_cache: bool  # taken from the cache rather than from a query this request waited for
    stale: bool = False  # older than the refresh interval (Cube's slowQuery)
    key: str = ""  # the query's result cache key


# ("ok", refreshed_at, result) or ("error", exception)
_Outcome = tuple[Any, ...]


def result_cache_key(*, source: str, sql: str, params: Sequence[Any], context: str) -> str:
    """The cache key of a query: data source identity (e.g. its URL), compiled SQL, parameters, and
    the caller's security context identity. Only a digest is stored, never the URL or the values."""
    material = json.dumps([source, sql, list(params), context], default=repr, separators=(",", ":"))
    return hashlib.sha256(material.encode()).hexdigest()


def _seconds(timeout: float) -> int:
    # Redis keeps whole seconds and deletes a key stored with 0: round up, never down.
    return max(1, math.ceil(timeout))


class QueryRunner:
    """Runs queries through the result cache and a pool of worker threads (see the module docstring)."""

    def __init__(
        self,
        *,
        cache: BaseCache | None = None,
        workers: int = 4,
        result_ttl_s: float = 24 * 3600,
        job_result_ttl_s: float = 5.0,
        job_margin_s: float = 30.0,
        poll_max_s: float = 0.05,
        namespace: str = "semantic",
    ) -> None:
        self._given = cache
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="semantic-query")
        self.result_ttl_s = result_ttl_s
        self.job_result_ttl_s = job_result_ttl_s
        self.job_margin_s = job_margin_s
        self.poll_max_s = poll_max_s
        self._namespace = namespace
        self._local: dict[str, Future[_Outcome]] = {}
        self._local_lock = threading.Lock()

    def _backend(self) -> BaseCache:
        return self._given if self._given is not None else thread_cache()

    # -- the cache, tolerant of a backend that is down -----------------------------------------------

    def _get(self, key: str) -> Any:
        try:
            return self._backend().get(f"{self._namespace}:{key}")
        except Exception:
            logger.warning("result cache unavailable (get)", exc_info=True)
            return None

    def _set(self, key: str, value: Any, timeout: float) -> None:
        try:
            self._backend().set(f"{self._namespace}:{key}", value, _seconds(timeout))
        except Exception:
            logger.warning("result cache unavailable (set)", exc_info=True)

    def _has(self, key: str) -> bool:
        try:
            return bool(self._backend().has_key(f"{self._namespace}:{key}"))
        except Exception:
            logger.warning("result cache unavailable (has_key)", exc_info=True)
            return False

    def _add(self, key: str, value: Any, timeout: float) -> bool:
        try:
            return bool(self._backend().add(f"{self._namespace}:{key}", value, _seconds(timeout)))
        except Exception:
            logger.warning("result cache unavailable (add): running the query without a job registry")
            return True

    def _set_many(self, values: dict[str, Any], timeout: float) -> None:
        try:
            self._backend().set_many({f"{self._namespace}:{k}": v for k, v in values.items()}, _seconds(timeout))
        except Exception:
            logger.warning("result cache unavailable (set_many)", exc_info=True)

    def stamps(self, keys: Sequence[str]) -> dict[str, float]:
        """When the latest result of each query ``key`` was read from its data source (one cache round trip);
        a key whose stamp the cache does not hold is left out."""
        names = {f"{self._namespace}:stamp:{key}": key for key in keys}
        try:
            found = self._backend().get_many(list(names))
        except Exception:
            logger.warning("result cache unavailable (get_many)", exc_info=True)
            return {}
        return {names[name]: stamp for name, stamp in found.items()}

    # -- the public entry ----------------------------------------------------------------------------

    def load(
        self,
        *,
        key: str,
        run: Callable[[], QueryResult],
        refresh_every_s: float,
        wait_s: float,
        job_timeout_s: float,
        mode: CacheMode = CacheMode.STALE_IF_SLOW,
    ) -> CachedResult:
        """Rows for the query ``key``, by ``mode``; ``run`` executes it (on a worker thread) when needed.

        ``wait_s`` is how long this request waits for a running query; ``job_timeout_s`` bounds the
        query itself (the data source's timeout) and so how long its job stays registered. Raises
        :class:`ContinueWait`, or the error ``run`` raised.
        """
        mode = CacheMode(mode)
        cached = None if mode is CacheMode.NO_CACHE else self._get(f"result:{key}")
        started = self._start(key, run, refresh_every_s, job_timeout_s, mode, cached)
        if isinstance(started, CachedResult):
            return started
        job_id, future = started
        return self._finish(key, job_id, self._await(job_id, future, wait_s), cached, mode, job_timeout_s)

    def _start(
        self,
        key: str,
        run: Callable[[], QueryResult],
        refresh_every_s: float,
        job_timeout_s: float,
        mode: CacheMode,
        cached: Any,
    ) -> CachedResult | tuple[str, Future[_Outcome] | None]:
        """The cached result (``cached``, as read) when fresh enough for ``mode``, else the job to wait for: its
        id, and its future when this request started it (``cached``, if any, is what a slow job falls back on)."""
        if cached is not None:
            refreshed_at, result = cached
            if time.time() - refreshed_at < refresh_every_s:
                return CachedResult(result=result, refreshed_at=refreshed_at, from_cache=True, key=key)
        job = self._attach_or_start(key, run, job_timeout_s, mode)
        if cached is not None and mode is CacheMode.STALE_WHILE_REVALIDATE:
            return CachedResult(result=cached[1], refreshed_at=cached[0], from_cache=True, stale=True, key=key)
        return job

    def _finish(
        self, key: str, job_id: str, outcome: _Outcome | None, cached: Any, mode: CacheMode, job_timeout_s: float
    ) -> CachedResult:
        if outcome is None:
            if cached is not None and mode is CacheMode.STALE_IF_SLOW:
                return CachedResult(result=cached[1], refreshed_at=cached[0], from_cache=True, stale=True, key=key)
            # The client repeats the request: its repeat may take this job's outcome, even in no-cache mode.
            self._set(f"waited:{job_id}", True, job_timeout_s + self.job_margin_s)
            raise ContinueWait()
        if outcome[0] == "error":
            raise copy.copy(outcome[1])
        return CachedResult(result=outcome[2], refreshed_at=outcome[1], from_cache=False, key=key)

    # -- jobs ----------------------------------------------------------------------------------------

    def _attach_or_start(
        self, key: str, run: Callable[[], QueryResult], job_timeout_s: float, mode: CacheMode
    ) -> tuple[str, Future[_Outcome] | None]:
        """The job for ``key``: the registered one (its id), or a new one this process runs (its id and future).
        A ``no-cache`` request does not take the outcome of a finished job, unless it repeats a request that job
        outlived."""
        registry_s = job_timeout_s + self.job_margin_s
        for _ in range(3):
            job_id = uuid.uuid4().hex
            if self._add(f"job:{key}", job_id, registry_s):
                return self._start_job(key, job_id, run)
            existing = self._get(f"job:{key}")
            if existing is None:
                continue  # the registered job expired between our add and get: try to become the owner again
            if mode is CacheMode.NO_CACHE and self._has(f"outcome:{existing}") and not self._has(f"waited:{existing}"):
                self._set(f"job:{key}", job_id, registry_s)
                return self._start_job(key, job_id, run)
            return existing, None
        raise DataSourceError("Query could not be scheduled")

    def _start_job(self, key: str, job_id: str, run: Callable[[], QueryResult]) -> tuple[str, Future[_Outcome]]:
        with self._local_lock:
            future = self._local[job_id] = self._executor.submit(self._run_job, key, job_id, run)
        future.add_done_callback(lambda _: self._forget(job_id))
        return job_id, future

    def _forget(self, job_id: str) -> None:
        with self._local_lock:
            self._local.pop(job_id, None)

    def _run_job(self, key: str, job_id: str, run: Callable[[], QueryResult]) -> _Outcome:
        """On a worker thread: run, cache the rows, publish the outcome. Never raises."""
        outcome: _Outcome
        try:
            result = run()
        except Exception as exc:
            outcome = ("error", exc)
            try:
                pickle.dumps(exc)
            except Exception:
                logger.exception("query job %s failed with an error that cannot be shared", job_id)
                outcome = ("error", DataSourceError("Query failed"))
        else:
            refreshed_at = time.time()
            outcome = ("ok", refreshed_at, result)
            self._set_many({f"result:{key}": (refreshed_at, result), f"stamp:{key}": refreshed_at}, self.result_ttl_s)
        self._set(f"outcome:{job_id}", outcome, self.job_result_ttl_s)
        # Keep pointing at the finished job for a moment: the repeat of a Continue wait finds it.
        self._set(f"job:{key}", job_id, self.job_result_ttl_s)
        return outcome

    def _await(self, job_id: str, future: Future[_Outcome] | None, wait_s: float) -> _Outcome | None:
        """The job's outcome, or None when it is not there within ``wait_s``. The request that started the job
        holds its future (a job may end, and leave ``_local``, before its starter looks: with the cache down its
        outcome is nowhere else); another request here attaches to the future while the job runs."""
        if future is None:
            with self._local_lock:
                future = self._local.get(job_id)
        if future is not None:
            try:
                return future.result(timeout=wait_s)
            except FutureTimeout:
                return None
        # Another process runs it (or ran it): its outcome appears in the cache.
        deadline = time.monotonic() + wait_s
        for delay in self._polls():
            outcome = self._get(f"outcome:{job_id}")
            remaining = deadline - time.monotonic()
            if outcome is not None or remaining <= 0:
                return outcome
            time.sleep(min(delay, remaining))
        raise AssertionError("unreachable")

    def _polls(self) -> Iterator[float]:
        """The delays between looks for another process's outcome: from 5 ms, doubling to ``poll_max_s``."""
        delay = 0.005
        while True:
            yield delay
            delay = min(delay * 2, self.poll_max_s)

    def shutdown(self, *, wait: bool = True) -> None:
        """Stop the workers; with ``wait``, after the running jobs have published their outcome."""
        self._executor.shutdown(wait=wait)


_runner: QueryRunner | None = None
_runner_lock = threading.Lock()


def query_runner() -> QueryRunner:
    """The process's shared runner, on the default cache; ``SEMANTIC["QUERY_WORKERS"]`` threads."""
    global _runner
    if _runner is None:
        with _runner_lock:
            if _runner is None:
                _runner = QueryRunner(workers=settings.SEMANTIC["QUERY_WORKERS"])
    return _runner
