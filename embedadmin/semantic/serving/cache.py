"""Cached query results, Cube's cache modes, and queries that outlive their request ("Continue wait").

Results, the job registry that lets a repeated request re-attach to a running query, and each result's stamp
(when it was read, which kept answers check) live in Django's cache, so with Redis they span processes. The
modes and the registry are described in ``docs/core-data-api.md`` ("Result cache and Continue wait").

A job shared between processes carries a lease (``lease:<job id>``, ``lease_s`` long) that its owner renews every
``renew_s`` while the job runs or waits to run: a request waiting on another process's job that finds the lease
gone (the owner died) takes the job over, running the query itself as the job's new owner, so an identical query
is never left waiting for the registration of a dead process to expire.

A job whose statement was cancelled (its starter's :class:`~embedadmin.semantic.sources.base.CancelScope`: a chat run
aborted) ends for its starter only: its cancellation is not published as the job's outcome and its lease is dropped,
so the other requests waiting on it take it over and get rows.
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
from django.core.cache.backends.redis import RedisCache

from embedadmin.core.logs import ThrottledWarning
from embedadmin.core.versions import thread_cache
from embedadmin.semantic.sources.base import DataSourceError, QueryCancelled, QueryResult

logger = logging.getLogger(__name__)

# While the cache (Redis) is down every request meets it: its traceback is logged once per interval per process,
# the rest counted, so an outage is visible without flooding the log (the product keeps answering without it).
_unavailable = ThrottledWarning(logger, 30.0)


def _cache_unavailable(operation: str, consequence: str = "") -> None:
    suffix = f": {consequence}" if consequence else ""
    _unavailable.warn("result cache unavailable (%s)%s", operation, suffix)


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
# What a look at another process's job may find besides its outcome: its owner stopped renewing its lease.
_LAPSED: _Outcome = ("lapsed",)


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
        lease_s: float = 1.0,
        renew_s: float = 0.25,
    ) -> None:
        if not 0 < renew_s < lease_s:
            raise ValueError("a job's lease must outlast several renewals: 0 < renew_s < lease_s")
        self._given = cache
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="semantic-query")
        self.result_ttl_s = result_ttl_s
        self.job_result_ttl_s = job_result_ttl_s
        self.job_margin_s = job_margin_s
        self.poll_max_s = poll_max_s
        self._namespace = namespace
        self.lease_s = lease_s
        self.renew_s = renew_s
        self._local: dict[str, Future[_Outcome]] = {}
        self._local_lock = threading.Lock()
        self._renewer: threading.Thread | None = None
        self._stopped = threading.Event()

    def _backend(self) -> BaseCache:
        return self._given if self._given is not None else thread_cache()

    # -- the cache, tolerant of a backend that is down -----------------------------------------------

    def _get(self, key: str) -> Any:
        try:
            return self._backend().get(f"{self._namespace}:{key}")
        except Exception:
            _cache_unavailable("get")
            return None

    def _set(self, key: str, value: Any, timeout: float) -> None:
        try:
            self._backend().set(f"{self._namespace}:{key}", value, _seconds(timeout))
        except Exception:
            _cache_unavailable("set")

    def _has(self, key: str) -> bool:
        try:
            return bool(self._backend().has_key(f"{self._namespace}:{key}"))
        except Exception:
            _cache_unavailable("has_key")
            return False

    def _add(self, key: str, value: Any, timeout: float) -> bool:
        try:
            return bool(self._backend().add(f"{self._namespace}:{key}", value, _seconds(timeout)))
        except Exception:
            _cache_unavailable("add", "running the query without a job registry")
            return True

    def _delete(self, key: str) -> None:
        try:
            self._backend().delete(f"{self._namespace}:{key}")
        except Exception:
            _cache_unavailable("delete")

    def _get_many(self, keys: Sequence[str]) -> dict[str, Any] | None:
        """The values of ``keys`` the cache holds (one round trip); None when the cache is unavailable."""
        names = {f"{self._namespace}:{key}": key for key in keys}
        try:
            found = self._backend().get_many(list(names))
        except Exception:
            _cache_unavailable("get_many")
            return None
        return {names[name]: value for name, value in found.items()}

    def _set_many(self, values: dict[str, Any], timeout: float) -> None:
        try:
            self._backend().set_many({f"{self._namespace}:{k}": v for k, v in values.items()}, _seconds(timeout))
        except Exception:
            _cache_unavailable("set_many")

    def stamps(self, keys: Sequence[str]) -> dict[str, float]:
        """When the latest result of each query ``key`` was read from its data source (one cache round trip);
        a key whose stamp the cache does not hold is left out."""
        names = {f"stamp:{key}": key for key in keys}
        found = self._get_many(list(names)) or {}
        return {names[name]: stamp for name, stamp in found.items()}

    # -- leases ---------------------------------------------------------------------------------------

    def _lease(self, job_ids: Sequence[str]) -> None:
        """Grant (or renew) the lease of jobs this process owns: ``lease:<job id>`` for ``lease_s``, to the
        millisecond on Redis (whose own clock expires it, so the processes' clocks need not agree)."""
        if not job_ids:
            return
        backend = self._backend()
        names = [f"{self._namespace}:lease:{job_id}" for job_id in job_ids]
        try:
            if isinstance(backend, RedisCache):
                # Django's Redis backend keeps whole seconds: a lease of 1.5 s is set with PX on its client.
                client = backend._cache.get_client(write=True)
                with client.pipeline(transaction=False) as pipe:
                    for name in names:
                        pipe.set(backend.make_and_validate_key(name), 1, px=max(1, round(self.lease_s * 1000)))
                    pipe.execute()
            else:  # local memory keeps fractional timeouts
                backend.set_many(dict.fromkeys(names, 1), self.lease_s)
        except Exception:
            _cache_unavailable("lease")

    def _ensure_renewer(self) -> None:
        """Start the thread renewing the leases of this process's jobs (again after a fork, which leaves it behind)."""
        renewer = self._renewer
        if renewer is not None and renewer.is_alive():
            return
        with self._local_lock:
            if self._renewer is None or not self._renewer.is_alive():
                self._renewer = threading.Thread(target=self._renew_leases, name="semantic-query-leases", daemon=True)
                self._renewer.start()

    def _renew_leases(self) -> None:
        """Every ``renew_s``: renew the lease of each job of this process, running or queued, until shutdown."""
        while not self._stopped.wait(self.renew_s):
            with self._local_lock:
                running = list(self._local)
            self._lease(running)

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
        job_id, outcome = self._await(key, job_id, future, run, wait_s, job_timeout_s)
        return self._finish(key, job_id, outcome, cached, mode, job_timeout_s)

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
            # The lease exists before the job can be seen: a request that finds the job finds its lease too.
            self._lease([job_id])
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

    def _take_over(
        self, key: str, lapsed_id: str, run: Callable[[], QueryResult], job_timeout_s: float
    ) -> tuple[str, Future[_Outcome] | None]:
        """The job that replaces ``lapsed_id``, whose owner stopped renewing its lease: this request's, run here
        (the first of the waiting requests to claim ``takeover:<lapsed id>``), or the one another request
        started in its place."""
        registry_s = job_timeout_s + self.job_margin_s
        job_id = uuid.uuid4().hex
        self._lease([job_id])
        if self._add(f"takeover:{lapsed_id}", job_id, registry_s):
            logger.warning("query job %s lost its owner (its lease lapsed): taken over as job %s", lapsed_id, job_id)
            self._set(f"job:{key}", job_id, registry_s)
            return self._start_job(key, job_id, run)
        successor = self._get(f"takeover:{lapsed_id}")
        if successor is None:  # the claim expired or the cache failed in between: run it here
            self._set(f"job:{key}", job_id, registry_s)
            return self._start_job(key, job_id, run)
        return successor, None

    def _start_job(self, key: str, job_id: str, run: Callable[[], QueryResult]) -> tuple[str, Future[_Outcome]]:
        self._ensure_renewer()
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
        except QueryCancelled as exc:
            # Cancelled for its starter: not an outcome for the others. Its lease goes (renewed no more), so
            # they take the job over.
            self._forget(job_id)
            self._delete(f"lease:{job_id}")
            return ("error", exc)
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

    def _await(
        self,
        key: str,
        job_id: str,
        future: Future[_Outcome] | None,
        run: Callable[[], QueryResult],
        wait_s: float,
        job_timeout_s: float,
    ) -> tuple[str, _Outcome | None]:
        """The job that answered (``job_id``, or the one that took it over) and its outcome, or None when it
        is not there within ``wait_s``. The request that started the job holds its future (a job may end, and
        leave ``_local``, before its starter looks: with the cache down its outcome is nowhere else); another
        request here attaches to the future while the job runs. A job of another process whose lease lapsed,
        or one its starter cancelled, is taken over, and the wait goes on for the job that replaced it."""
        deadline = time.monotonic() + wait_s
        mine = future is not None
        while True:
            if future is None:
                with self._local_lock:
                    future = self._local.get(job_id)
            if future is not None:
                try:
                    ended = future.result(timeout=max(0.0, deadline - time.monotonic()))
                except FutureTimeout:
                    return job_id, None
                if mine or not (ended[0] == "error" and isinstance(ended[1], QueryCancelled)):
                    return job_id, ended
            else:
                polled = self._poll(job_id, deadline)
                if polled is not _LAPSED:
                    return job_id, polled
            # Its owner died, or its starter cancelled it: this request runs it (or joins who does).
            job_id, future = self._take_over(key, job_id, run, job_timeout_s)
            mine = future is not None

    def _poll(self, job_id: str, deadline: float) -> _Outcome | None:
        """Another process runs the job (or ran it): its outcome, once it appears in the cache; None at the
        ``deadline``; ``_LAPSED`` when its owner's lease is gone and it has no outcome (the owner died)."""
        for delay in self._polls():
            found = self._get_many([f"outcome:{job_id}", f"lease:{job_id}"])
            if found is not None:
                outcome = found.get(f"outcome:{job_id}")
                if outcome is not None:
                    return outcome
                if f"lease:{job_id}" not in found:
                    return _LAPSED
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            time.sleep(min(delay, remaining))
        raise AssertionError("unreachable")

    def _polls(self) -> Iterator[float]:
        """The delays between looks for another process's outcome: from 5 ms, doubling to ``poll_max_s``."""
        delay = 0.005
        while True:
            yield delay
            delay = min(delay * 2, self.poll_max_s)

    def shutdown(self, *, wait: bool = True) -> None:
        """Stop the workers; with ``wait``, after the running jobs have published their outcome. Their leases are
        renewed until then."""
        self._executor.shutdown(wait=wait)
        self._stopped.set()


_runner: QueryRunner | None = None
_runner_lock = threading.Lock()


def query_runner() -> QueryRunner:
    """The process's shared runner, on the default cache; ``SEMANTIC["QUERY_WORKERS"]`` threads, job leases of
    ``SEMANTIC["JOB_LEASE_SECONDS"]`` renewed every ``SEMANTIC["JOB_RENEW_SECONDS"]``."""
    global _runner
    if _runner is None:
        with _runner_lock:
            if _runner is None:
                semantic = settings.SEMANTIC
                _runner = QueryRunner(
                    workers=semantic["QUERY_WORKERS"],
                    lease_s=semantic["JOB_LEASE_SECONDS"],
                    renew_s=semantic["JOB_RENEW_SECONDS"],
                )
    return _runner
