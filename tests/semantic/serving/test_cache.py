"""The result cache, its modes, and Continue wait: locally on both cache backends, across processes on Redis."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.core.cache.backends.redis import RedisCache

from embedadmin.semantic.serving.cache import CachedResult, CacheMode, ContinueWait, QueryRunner, result_cache_key
from embedadmin.semantic.sources.base import DataSourceError, QueryResult, QueryTimeout
from tests.semantic.serving.cache_support import REDIS_URL, Query, counted_waits, redis_backend, rows
from tests.waiting import wait_until

REPO = Path(__file__).resolve().parents[3]
KEY = result_cache_key(source="duckdb:///demo", sql="SELECT count(*) FROM orders", params=[], context="ctx")


@pytest.fixture
def runner(backend) -> Iterator[QueryRunner]:
    runner = QueryRunner(cache=backend, workers=4, job_result_ttl_s=1, job_margin_s=1)
    yield runner
    runner.shutdown()


def load(runner: QueryRunner, query: Query, *, mode: CacheMode = CacheMode.STALE_IF_SLOW, **options) -> CachedResult:
    settings = {"key": KEY, "refresh_every_s": 60, "wait_s": 2, "job_timeout_s": 10, **options}
    return runner.load(run=query, mode=mode, **settings)


def job_forgotten(runner: QueryRunner, key: str = KEY) -> bool:
    """The last job of ``key`` is registered no more: the window in which a repeat picks up a finished job's outcome
    (``job_result_ttl_s``) is over, so the next load that does not take the cached rows runs the query again."""
    return not runner._has(f"job:{key}")


def refreshed_since(runner: QueryRunner, moment: float, key: str = KEY) -> bool:
    """The cache holds rows of ``key`` read after ``moment``."""
    return runner.stamps([key]).get(key, moment) > moment


# --- keys ---------------------------------------------------------------------------------------------


def test_the_key_depends_on_source_sql_params_and_context():
    base = {"source": "duckdb:///a", "sql": "SELECT $1", "params": [1], "context": "c"}
    variants = [
        {**base, "source": "duckdb:///b"},
        {**base, "sql": "SELECT $1 "},
        {**base, "params": ["1"]},
        {**base, "params": [1, None]},
        {**base, "context": "d"},
    ]

    keys = {result_cache_key(**variant) for variant in variants}

    assert result_cache_key(**base) == result_cache_key(**dict(base))
    assert len(keys) == len(variants)
    assert result_cache_key(**base) not in keys
    assert "duckdb" not in result_cache_key(**base)


# --- hits and refresh ---------------------------------------------------------------------------------


def test_a_fresh_result_is_served_from_the_cache(runner):
    query = Query()

    first = load(runner, query)
    second = load(runner, query)

    assert (first.result, first.from_cache, first.stale) == (rows(1), False, False)
    assert (second.result, second.from_cache, second.stale) == (rows(1), True, False)
    assert second.refreshed_at == first.refreshed_at
    assert query.calls == 1


def test_other_keys_have_their_own_results(runner):
    first, other = Query(), Query()

    load(runner, first)
    result = load(runner, other, key=result_cache_key(source="x", sql="y", params=[], context="z"))

    assert (result.result, result.from_cache, other.calls) == (rows(1), False, 1)


def test_a_stale_result_is_refreshed_when_the_query_is_fast(runner):
    query = Query()
    first = load(runner, query, refresh_every_s=0.2)

    # past the refresh interval (0.2 s) and the finished job's pickup window (1 s, real time on the cache's clock)
    wait_until(lambda: job_forgotten(runner), "the finished job's pickup window ends")
    second = load(runner, query, refresh_every_s=0.2)

    assert (second.result, second.from_cache, second.stale) == (rows(2), False, False)
    assert second.refreshed_at > first.refreshed_at


# --- modes when the query is slow ----------------------------------------------------------------------


def prime_stale(runner: QueryRunner) -> Query:
    """Cache rows(1), let them go stale, and return a slow query that would produce rows(2)."""
    query = Query()
    load(runner, query, refresh_every_s=0.2)
    wait_until(lambda: job_forgotten(runner), "the finished job's pickup window ends")  # stale by then too
    query.gate.clear()
    query.started.clear()
    return query


def test_stale_if_slow_serves_stale_rows_while_the_refresh_is_slow(runner):
    query = prime_stale(runner)

    started = time.monotonic()
    served = load(runner, query, refresh_every_s=0.2, wait_s=0.2)
    waited = time.monotonic() - started
    query.gate.set()
    wait_until(lambda: refreshed_since(runner, served.refreshed_at), "the refresh caches its rows")
    refreshed = load(runner, query, refresh_every_s=60)

    assert (served.result, served.from_cache, served.stale) == (rows(1), True, True)
    assert 0.2 <= waited < 1
    assert (refreshed.result, refreshed.from_cache) == (rows(2), True)


def test_stale_while_revalidate_answers_at_once_and_refreshes_in_the_background(runner):
    query = prime_stale(runner)

    started = time.monotonic()
    served = load(runner, query, mode=CacheMode.STALE_WHILE_REVALIDATE, refresh_every_s=0.2, wait_s=5)
    waited = time.monotonic() - started
    assert query.started.wait(5)
    query.gate.set()
    wait_until(lambda: refreshed_since(runner, served.refreshed_at), "the background refresh caches its rows")
    refreshed = load(runner, query, mode=CacheMode.STALE_WHILE_REVALIDATE, refresh_every_s=60)

    assert (served.result, served.stale) == (rows(1), True)
    assert waited < 0.2
    assert (refreshed.result, refreshed.from_cache, refreshed.stale) == (rows(2), True, False)
    assert query.calls == 2


def test_must_revalidate_never_serves_stale_rows(runner):
    query = prime_stale(runner)

    with pytest.raises(ContinueWait) as caught:
        load(runner, query, mode=CacheMode.MUST_REVALIDATE, refresh_every_s=0.2, wait_s=0.2)
    query.gate.set()
    fresh = load(runner, query, mode=CacheMode.MUST_REVALIDATE, refresh_every_s=0.2, wait_s=5)

    assert str(caught.value) == "Continue wait"
    # The fresh rows come from the re-attached job or, if it finished first, from the cache it just
    # filled: either way never the stale rows, and the query ran once more, not twice.
    assert (fresh.result, fresh.stale) == (rows(2), False)
    assert query.calls == 2


def test_no_cache_runs_the_query_despite_a_fresh_result_and_refreshes_the_cache(runner):
    query = Query()
    load(runner, query)

    bypassed = load(runner, query, mode=CacheMode.NO_CACHE)
    again = load(runner, query, mode=CacheMode.NO_CACHE)
    cached = load(runner, query)

    # Every no-cache request runs the query, even right after the last one finished (as Cube does).
    assert (bypassed.result, bypassed.from_cache) == (rows(2), False)
    assert (again.result, again.from_cache) == (rows(3), False)
    assert (cached.result, cached.from_cache) == (rows(3), True)
    assert query.calls == 3


def test_a_result_is_stamped_with_when_it_was_read(runner):
    query = Query()

    first = load(runner, query)
    stamped = runner.stamps([KEY, "never-run"])
    refreshed = load(runner, query, mode=CacheMode.NO_CACHE)

    assert stamped == {KEY: first.refreshed_at}
    assert runner.stamps([KEY]) == {KEY: refreshed.refreshed_at}
    assert refreshed.refreshed_at > first.refreshed_at


# --- Continue wait ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", list(CacheMode))
def test_a_slow_query_answers_continue_wait_and_the_repeat_reattaches(runner, mode):
    query = Query(gated=True)

    with pytest.raises(ContinueWait):
        load(runner, query, mode=mode, wait_s=0.1)
    with pytest.raises(ContinueWait):
        load(runner, query, mode=mode, wait_s=0.1)
    query.gate.set()
    wait_until(lambda: not runner._local, "the job ends between the client's repeats")
    answer = load(runner, query, mode=mode, wait_s=0.1)

    assert answer.result == rows(1)
    assert query.calls == 1


def test_a_wait_that_ends_leaves_a_queued_job_to_run(backend):
    """The job a request stops waiting for still runs, even when it had not started (it was queued behind
    another): the repeat gets its rows."""
    runner = QueryRunner(cache=backend, workers=1, job_result_ttl_s=1, job_margin_s=1)
    ahead, queued = Query(gated=True), Query()
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            first = pool.submit(load, runner, ahead, key="ahead", wait_s=5)
            assert ahead.started.wait(5)
            with pytest.raises(ContinueWait):
                runner.load(run=queued, key=KEY, refresh_every_s=60, wait_s=0.1, job_timeout_s=10)
            ahead.gate.set()
            assert first.result().result == rows(1)
        answer = runner.load(run=queued, key=KEY, refresh_every_s=60, wait_s=2, job_timeout_s=10)
    finally:
        runner.shutdown()

    assert answer.result == rows(1)
    assert queued.calls == 1


def test_identical_concurrent_requests_share_one_run(runner, monkeypatch):
    query = Query(gated=True)
    waits = counted_waits(runner, monkeypatch)

    with ThreadPoolExecutor(max_workers=6) as pool:
        pending = [pool.submit(load, runner, query, wait_s=5) for _ in range(6)]
        wait_until(lambda: len(waits) == 6, "every request waits on the run")
        query.gate.set()
        answers = [future.result() for future in pending]

    assert [answer.result for answer in answers] == [rows(1)] * 6
    assert query.calls == 1


# --- errors -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "kind", "message"),
    [
        (DataSourceError('Binder Error: column "x" not found'), DataSourceError, 'Binder Error: column "x" not found'),
        (QueryTimeout(2.5), QueryTimeout, "Query timeout: the query ran longer than 2.5 s and was stopped"),
    ],
)
def test_errors_reach_the_request_and_its_repeat_but_are_not_cached(runner, error, kind, message):
    failing = Query(error=error)

    with pytest.raises(kind) as first:
        load(runner, failing)
    with pytest.raises(kind) as repeat:
        load(runner, failing)
    wait_until(lambda: job_forgotten(runner), "the failed job's pickup window ends")
    recovered = load(runner, Query())

    assert str(first.value) == str(repeat.value) == message
    assert failing.calls == 1
    assert (recovered.result, recovered.from_cache) == (rows(1), False)


class Unpicklable(Exception):
    def __init__(self, handle: threading.Lock) -> None:
        super().__init__("holds a lock")
        self.handle = handle

    def __reduce__(self):
        raise TypeError("cannot pickle a lock")


def test_an_error_that_cannot_be_shared_becomes_a_generic_query_failure(runner):
    with pytest.raises(DataSourceError) as caught:
        load(runner, Query(error=Unpicklable(threading.Lock())))

    assert str(caught.value) == "Query failed"


def test_a_cache_backend_that_is_down_still_answers(redis_prefix):
    broken = QueryRunner(cache=RedisCache("redis://127.0.0.1:1/0", {"KEY_PREFIX": redis_prefix}), workers=2)
    query = Query()

    first = load(broken, query)
    second = load(broken, query)
    broken.shutdown()

    assert (first.result, first.from_cache) == (rows(1), False)
    assert (second.result, second.from_cache) == (rows(2), False)


class PreemptedStarter(QueryRunner):
    """A runner whose requests look for their job's outcome only once the job has ended and left the process's
    table of running jobs, as a thread preempted on a loaded machine does."""

    def _await(self, key, job_id, *rest):
        wait_until(lambda: job_id not in self._local, "the job ends and leaves the table of running jobs", every=0.001)
        return super()._await(key, job_id, *rest)


def test_a_job_that_ends_before_its_request_waits_still_answers_with_the_cache_down(redis_prefix):
    broken = PreemptedStarter(cache=RedisCache("redis://127.0.0.1:1/0", {"KEY_PREFIX": redis_prefix}), workers=2)

    answer = load(broken, Query(), wait_s=0.5)
    broken.shutdown()

    assert (answer.result, answer.from_cache) == (rows(1), False)


# --- across processes (Redis) -------------------------------------------------------------------------

OWNER_SCRIPT = """
import os, sys
from pathlib import Path
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
import django
django.setup()
from django.core.cache.backends.redis import RedisCache
from embedadmin.semantic.serving.cache import ContinueWait, QueryRunner
from embedadmin.semantic.sources.base import QueryResult
from tests.waiting import wait_until

redis_url, prefix, key, gate = sys.argv[1:5]
job_timeout_s = float(sys.argv[5])
runner = QueryRunner(cache=RedisCache(redis_url, {"KEY_PREFIX": prefix}), workers=2, job_margin_s=1)

def run():
    wait_until(Path(gate).exists, "the test opens the gate")
    return QueryResult(columns=["n"], types=["integer"], rows=[(42,)])

try:
    runner.load(key=key, run=run, refresh_every_s=60, wait_s=0.1, job_timeout_s=job_timeout_s)
    print("answered", flush=True)
except ContinueWait:
    print("continue-wait", flush=True)
runner.shutdown(wait=True)
print("done", flush=True)
"""


def start_owner(redis_prefix: str, gate: Path, *, job_timeout_s: float) -> subprocess.Popen:
    """Another web process: it starts the slow query, answers Continue wait, and keeps the job running."""
    process = subprocess.Popen(
        [sys.executable, "-c", OWNER_SCRIPT, REDIS_URL, redis_prefix, KEY, str(gate), str(job_timeout_s)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline() == "continue-wait\n"
    return process


def test_a_second_process_reattaches_to_the_job_of_the_first(redis_prefix, tmp_path, monkeypatch):
    gate = tmp_path / "gate"
    owner = start_owner(redis_prefix, gate, job_timeout_s=30)
    here = QueryRunner(cache=redis_backend(redis_prefix), workers=2)
    waits = counted_waits(here, monkeypatch)
    query = Query()

    with pytest.raises(ContinueWait):
        load(here, query, wait_s=0.3)
    with ThreadPoolExecutor(max_workers=1) as pool:
        repeat = pool.submit(load, here, query, wait_s=10)
        wait_until(lambda: len(waits) == 2, "the repeat waits on the owner's job")  # attached before the rows exist
        gate.touch()
        answer = repeat.result()
    owner_output = owner.communicate(timeout=10)[0]
    cached = load(here, query)
    here.shutdown()

    assert answer.result == QueryResult(columns=["n"], types=["integer"], rows=[(42,)])
    assert answer.from_cache is False
    assert (cached.result.rows, cached.from_cache) == ([(42,)], True)
    assert query.calls == 0
    assert owner_output == "done\n"


def test_the_job_of_a_process_that_died_is_taken_over_when_its_lease_lapses(redis_prefix, tmp_path):
    owner = start_owner(redis_prefix, tmp_path / "never-opened", job_timeout_s=30)
    owner.send_signal(signal.SIGKILL)
    owner.wait(timeout=10)
    killed_at = time.monotonic()
    here = QueryRunner(cache=redis_backend(redis_prefix), workers=2)
    query = Query()

    # The dead owner stops renewing its lease (SEMANTIC JOB_LEASE_SECONDS, 1 s): the waiting request takes the job
    # over and runs the query itself, long before the job's own timeout (30 s).
    answer = load(here, query, wait_s=10)
    took = time.monotonic() - killed_at
    here.shutdown()

    assert (answer.result, answer.from_cache) == (rows(1), False)
    assert query.calls == 1
    assert took < 5


def test_an_unavailable_cache_is_reported_once_per_interval_not_per_request(monkeypatch, caplog):
    from embedadmin.semantic.serving import cache as cache_module

    monkeypatch.setattr(cache_module._unavailable, "logged_at", -1e9)
    monkeypatch.setattr(cache_module._unavailable, "since", 0)
    with caplog.at_level("WARNING", logger=cache_module.logger.name):
        for _ in range(500):  # every request of an outage meets the cache
            cache_module._cache_unavailable("get")
    reports = [r for r in caplog.records if "result cache unavailable" in r.getMessage()]
    assert len(reports) == 1
    # The next report, once the interval passed, says how many it did not log.
    monkeypatch.setattr(cache_module._unavailable, "logged_at", -1e9)
    with caplog.at_level("WARNING", logger=cache_module.logger.name):
        cache_module._cache_unavailable("set")
    assert "499 more failures since the last report" in caplog.records[-1].getMessage()
