"""Query jobs shared between processes carry a lease their owner renews: a waiting request takes over the job of
an owner that stopped renewing (its process died) within 2 s, on Redis across real processes, and in one process
on both cache backends."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache

from embedadmin.semantic.serving.cache import CacheMode, ContinueWait, QueryRunner, result_cache_key
from tests.semantic.serving.cache_support import REDIS_URL, Query, counted_waits, redis_backend, rows
from tests.waiting import wait_until

REPO = Path(__file__).resolve().parents[3]
KEY = result_cache_key(source="duckdb:///demo", sql="SELECT sum(amount) FROM orders", params=[], context="lease")


# --- across processes (Redis) -------------------------------------------------------------------------

OWNER_SCRIPT = """
import os, sys, time
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
import django
django.setup()
from django.core.cache.backends.redis import RedisCache
from embedadmin.semantic.serving.cache import ContinueWait, QueryRunner
from embedadmin.semantic.sources.base import QueryResult

redis_url, prefix, key = sys.argv[1:4]
runner = QueryRunner(cache=RedisCache(redis_url, {"KEY_PREFIX": prefix}), workers=2, lease_s=1.5, renew_s=0.5)

def run():
    time.sleep(3600)  # a query that outlives its process
    return QueryResult(columns=["n"], types=["integer"], rows=[(-1,)])

try:
    runner.load(key=key, run=run, refresh_every_s=60, wait_s=0.1, job_timeout_s=30)
except ContinueWait:
    print("continue-wait", flush=True)
time.sleep(3600)  # the process lives on, renewing its lease, until the test kills it
"""


def start_owner(redis_prefix: str) -> subprocess.Popen:
    """Another web process: it starts a query that never ends, answers Continue wait, and keeps renewing."""
    process = subprocess.Popen(
        [sys.executable, "-c", OWNER_SCRIPT, REDIS_URL, redis_prefix, KEY], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "continue-wait\n"
    return process


def job_of(prefix: str) -> str:
    return RedisCache(REDIS_URL, {"KEY_PREFIX": prefix}).get(f"semantic:job:{KEY}")


def leased(prefix: str, job_id: str) -> bool:
    """Whether the owner's lease of ``job_id`` is still on Redis (it lapses there, on Redis's clock)."""
    return RedisCache(REDIS_URL, {"KEY_PREFIX": prefix}).has_key(f"semantic:lease:{job_id}")


def test_a_live_owner_keeps_its_job_and_a_killed_one_is_taken_over_within_2_seconds(redis_prefix, monkeypatch):
    owner = start_owner(redis_prefix)
    owned = job_of(redis_prefix)
    here = QueryRunner(cache=redis_backend(redis_prefix), workers=2)
    waits = counted_waits(here, monkeypatch)
    query = Query(value=7)
    try:
        # While the owner lives (3 s, twice its lease), requests here wait on its job: they never run the query.
        with pytest.raises(ContinueWait):
            here.load(key=KEY, run=query, refresh_every_s=60, wait_s=3, job_timeout_s=30)
        assert query.calls == 0
        assert job_of(redis_prefix) == owned

        with ThreadPoolExecutor(max_workers=1) as pool:
            waiting = pool.submit(here.load, key=KEY, run=query, refresh_every_s=60, wait_s=10, job_timeout_s=30)
            wait_until(lambda: len(waits) == 2, "the request waits on the owner's job")
            owner.send_signal(signal.SIGKILL)
            killed = time.monotonic()
            answer = waiting.result(timeout=15)
            took = time.monotonic() - killed
    finally:
        owner.kill()
        owner.wait(timeout=10)
        here.shutdown()

    assert (answer.result, answer.from_cache) == (rows(7), False)
    assert query.calls == 1
    assert took < 2.0, f"took {took:.2f} s after the kill"
    assert job_of(redis_prefix) != owned


def test_a_request_arriving_after_the_owner_died_takes_over_at_once(redis_prefix):
    owner = start_owner(redis_prefix)
    owner.send_signal(signal.SIGKILL)
    owner.wait(timeout=10)
    job = job_of(redis_prefix)
    wait_until(lambda: not leased(redis_prefix, job), "the dead owner's lease lapses (1.5 s)")
    assert job_of(redis_prefix) == job  # the job stays registered (timeout 30 s + margin)
    here = QueryRunner(cache=redis_backend(redis_prefix), workers=2)

    started = time.monotonic()
    answer = here.load(key=KEY, run=Query(value=3), refresh_every_s=60, wait_s=5, job_timeout_s=30)
    took = time.monotonic() - started
    here.shutdown()

    assert answer.result == rows(3)
    assert took < 0.5


TAKER_SCRIPT = """
import os, sys, time
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
import django
django.setup()
from django.core.cache.backends.redis import RedisCache
from embedadmin.semantic.serving.cache import ContinueWait, QueryRunner
from embedadmin.semantic.sources.base import QueryResult

redis_url, prefix, key, runs = sys.argv[1:5]

def run():
    with open(runs, "a") as log:
        log.write(f"{os.getpid()}\\n")
    time.sleep(1.0)  # a query that takes a while: the other takers wait on a run under way, not a finished one
    return QueryResult(columns=["n"], types=["integer"], rows=[(5,)])

class Announcing(QueryRunner):
    def _await(self, *args):
        print("waiting", flush=True)  # on the owner's job
        return super()._await(*args)

runner = Announcing(cache=RedisCache(redis_url, {"KEY_PREFIX": prefix}), workers=2)
print("ready", flush=True)
sys.stdin.readline()
answer = runner.load(key=key, run=run, refresh_every_s=60, wait_s=10, job_timeout_s=30)
print(answer.result.rows[0][0], flush=True)
runner.shutdown()
"""


def test_waiting_processes_take_a_dead_owners_job_over_once(redis_prefix, tmp_path):
    """Four processes wait on the job of a process that dies: one of them runs the query, the others take its rows."""
    owner = start_owner(redis_prefix)
    runs = tmp_path / "runs"
    takers = [
        subprocess.Popen(
            [sys.executable, "-c", TAKER_SCRIPT, REDIS_URL, redis_prefix, KEY, str(runs)],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    try:
        for taker in takers:
            assert taker.stdout is not None
            assert taker.stdout.readline() == "ready\n"
        for taker in takers:
            assert taker.stdin is not None
            taker.stdin.write("go\n")
            taker.stdin.flush()
        for taker in takers:
            assert taker.stdout.readline() == "waiting\n"  # every taker waits on the owner's job
        owner.send_signal(signal.SIGKILL)
        answers = [taker.communicate(timeout=20)[0] for taker in takers]
    finally:
        owner.kill()
        owner.wait(timeout=10)
        for taker in takers:
            taker.kill()

    assert answers == ["5\n"] * 4
    assert len(runs.read_text().split()) == 1


# --- in one process, both backends: an owner that stops renewing --------------------------------------


class Silent(QueryRunner):
    """A runner that registers its jobs but never renews their leases: a process that hung or died."""

    def _ensure_renewer(self) -> None:
        return


def test_a_job_whose_owner_stops_renewing_is_taken_over(backend):
    dead = Silent(cache=backend, workers=1, lease_s=0.6, renew_s=0.2)
    alive = QueryRunner(cache=backend, workers=2, lease_s=0.6, renew_s=0.2)
    hung = Query(gated=True, value=-1)
    query = Query(value=9)
    try:
        with pytest.raises(ContinueWait):
            dead.load(key=KEY, run=hung, refresh_every_s=60, wait_s=0.05, job_timeout_s=30)
        # The hung job never ends: an answer within the wait (5 s, far short of the job's 30 s) can only come from
        # taking the job over once its lease lapsed.
        answer = alive.load(key=KEY, run=query, refresh_every_s=60, wait_s=5, job_timeout_s=30)
    finally:
        hung.gate.set()
        dead.shutdown()
        alive.shutdown()

    assert answer.result == rows(9)
    assert query.calls == 1


@pytest.mark.parametrize("mode", [CacheMode.MUST_REVALIDATE, CacheMode.NO_CACHE])
def test_a_renewed_job_outlives_its_lease_and_keeps_one_run(backend, mode):
    """A job running for three lease periods is still the only run: waiters on another runner attach to it. The
    lease is renewed ten times within it, so a busy machine's stalls (a few hundred ms) do not let it lapse."""
    owner = QueryRunner(cache=backend, workers=1, lease_s=1.0, renew_s=0.1)
    other = QueryRunner(cache=backend, workers=2, lease_s=1.0, renew_s=0.1)
    slow, never = Query(gated=True, value=4), Query(value=-1)
    try:
        with pytest.raises(ContinueWait):
            owner.load(key=KEY, run=slow, refresh_every_s=60, wait_s=0.05, job_timeout_s=30, mode=mode)
        with pytest.raises(ContinueWait):
            other.load(key=KEY, run=never, refresh_every_s=60, wait_s=3.0, job_timeout_s=30, mode=mode)
        threading.Timer(0.3, slow.gate.set).start()
        answer = other.load(key=KEY, run=never, refresh_every_s=60, wait_s=5, job_timeout_s=30, mode=mode)
    finally:
        slow.gate.set()
        owner.shutdown()
        other.shutdown()

    assert answer.result == rows(4)
    assert (slow.calls, never.calls) == (1, 0)


def test_a_lease_needs_renewals_within_it():
    with pytest.raises(ValueError):
        QueryRunner(cache=LocMemCache("x", {}), lease_s=0.5, renew_s=0.5)
