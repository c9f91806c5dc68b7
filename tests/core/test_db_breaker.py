"""The connection breaker of the PostgreSQL pools (``embedadmin/core/pgpool.py``), against a PostgreSQL server of
the test's own that it stops, starts and freezes (``SIGSTOP``: it accepts TCP connections and answers none).

While the server is down a request is refused at once, with no connection attempt (psycopg_pool's own counter of
attempts stays put); a half-open breaker makes exactly one attempt however many threads ask; while open, every
attempt is a probe (the pool's reconnections wait); a successful attempt closes it, with or without requests, and
the pool serves again. Through Django: the JSON 503 with ``Retry-After`` and ``/readyz`` without an attempt while
open, 200 once the server is back. Nothing here judges speed: attempts, probes and states are counted (the one
sleep gives a second probe time to start, were there one)."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.core.signals import request_finished, request_started
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.utils import load_backend

from drills._cluster import Postgres
from embedadmin.core.errors import RETRY_AFTER_SECONDS
from embedadmin.core.pgpool import CheckedConnectionPool, DatabaseUnreachable, unavailable_reason
from embedadmin.envconfig import database_from_url
from tests.waiting import STOP_LOSS_S, wait_until

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def server() -> Iterator[Postgres]:
    """A PostgreSQL of our own (the drills' ``Postgres``: ``initdb`` in a temporary directory, a free port)."""
    directory = Path(tempfile.mkdtemp(prefix="embedadmin-breaker-"))
    directory.chmod(0o755)  # the postgres user (when we are root) goes through it to its data directory
    pg = Postgres(directory / "pg")
    try:
        pg.init()
        pg.start()
        yield pg
    finally:
        pg.destroy()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def up(server: Postgres) -> Postgres:
    """The server, running (a test before may have stopped it)."""
    if server.pid is None:
        server.start()
    return server


@contextmanager
def frozen(pg: Postgres) -> Iterator[None]:
    """The postmaster stopped by ``SIGSTOP``: the kernel still accepts connections, nobody answers them."""
    assert pg.pid is not None
    os.kill(pg.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pg.pid, signal.SIGCONT)


@contextmanager
def pool_on(pg: Postgres, *, probe_interval: float) -> Iterator[CheckedConnectionPool]:
    pool = CheckedConnectionPool(
        f"host=127.0.0.1 port={pg.port} dbname=postgres user=postgres",
        min_size=1,
        max_size=4,
        timeout=STOP_LOSS_S,
        probe_interval=probe_interval,
        name="breaker-test",
        open=False,
    )
    pool.open(wait=True)
    try:
        yield pool
    finally:
        pool.close()


def attempts(pool: CheckedConnectionPool) -> int:
    """Connection attempts the pool has made (psycopg_pool's counter: its workers' and the probes')."""
    return int(pool.get_stats().get("connections_num", 0))


def select_one(pool: CheckedConnectionPool) -> int:
    with pool.connection() as conn:
        row = conn.execute("SELECT 1").fetchone()
    assert row is not None
    return int(row[0])


def open_breaker(pool: CheckedConnectionPool, pg: Postgres) -> None:
    """Stop the server and let one request find out: its connection attempt fails and opens the breaker."""
    assert select_one(pool) == 1
    pg.stop()
    with pytest.raises(DatabaseUnreachable) as refused:
        select_one(pool)
    assert pool.breaker.is_open
    assert unavailable_reason(refused.value).startswith(("connection refused", "the database system is shutting"))


# --- the pool --------------------------------------------------------------------------------------------------


def test_a_failed_connection_attempt_opens_it_and_requests_are_refused_without_an_attempt(up):
    with pool_on(up, probe_interval=3600) as pool:  # no probe is due during this test
        open_breaker(pool, up)
        made = attempts(pool)

        outcomes = []
        for _ in range(20):
            with pytest.raises(DatabaseUnreachable) as refused:
                pool.getconn()
            outcomes.append(refused.value)

        assert attempts(pool) == made  # no request tried to connect, nor did the pool's own reconnections
        assert pool.breaker.opened == 1
        assert pool.breaker.refused == 20
        assert pool.breaker.probes == 0
        assert pool.breaker.state == "open"
        assert all(isinstance(exc.__cause__, psycopg.OperationalError) for exc in outcomes)


def test_many_threads_meeting_a_half_open_breaker_make_exactly_one_probe(up):
    threads = 16
    with pool_on(up, probe_interval=3600) as pool:  # no probe while the server starts, before it is frozen
        open_breaker(pool, up)
        up.start()
        with frozen(up):
            pool.breaker.probe_interval = 0.2
            made, probes = attempts(pool), pool.breaker.probes
            barrier = threading.Barrier(threads)
            asking: set[int] = set()
            refused: list[BaseException] = []

            def request() -> Any:
                barrier.wait()
                asking.add(threading.get_ident())
                try:
                    return pool.getconn()
                except DatabaseUnreachable as exc:
                    refused.append(exc)
                    return None

            with ThreadPoolExecutor(threads) as executor:
                wait_until(lambda: pool.breaker.state == "half-open", "the breaker half-opens")
                futures = [executor.submit(request) for _ in range(threads)]
                # One attempt hangs on the frozen server (a request's, or the pool's watcher's if it came first);
                # every other request is answered meanwhile, and no second attempt starts however long it hangs.
                wait_until(lambda: attempts(pool) > made, "the probe's attempt started")
                wait_until(lambda: len(asking) == threads, "every request asked")
                probing_requests = int(pool.breaker.prober in asking)
                wait_until(lambda: len(refused) == threads - probing_requests, "every other request refused")
                time.sleep(1.0)  # five probe intervals: a second probe would have started by now
                assert pool.breaker.probes == probes + 1
                assert attempts(pool) == made + 1
                assert pool.breaker.state == "half-open"  # the probe is under way
                in_flight = [f for f in futures if not f.done()]
                assert len(in_flight) == probing_requests

                os.kill(up.pid or 0, signal.SIGCONT)  # the server answers: the probe connects
                wait_until(lambda: pool.breaker.state == "closed", "the probe closes the breaker")
                for future in in_flight:  # the request that probed gets its connection
                    conn = future.result(timeout=STOP_LOSS_S)
                    assert conn.execute("SELECT 1").fetchone() == (1,)
                    pool.putconn(conn)

        assert select_one(pool) == 1
        assert pool.breaker.probes == probes + 1


def test_while_open_every_connection_attempt_is_a_probe_and_a_failed_one_keeps_it_open(up):
    with pool_on(up, probe_interval=0.05) as pool:
        open_breaker(pool, up)
        made, probes = attempts(pool), pool.breaker.probes

        wait_until(lambda: pool.breaker.probes >= probes + 3, "three probes (the watcher's, no request asking)")

        assert attempts(pool) - made == pool.breaker.probes - probes  # the pool's own reconnections wait
        assert pool.breaker.opened == 1  # still the same opening
        assert pool.breaker.is_open


def test_the_watcher_closes_it_without_any_request_once_the_server_is_back(up):
    with pool_on(up, probe_interval=0.2) as pool:
        open_breaker(pool, up)
        requested = pool.get_stats().get("requests_num", 0)
        up.start()

        wait_until(lambda: pool.breaker.state == "closed", "the breaker closes")

        assert pool.get_stats().get("requests_num", 0) == requested  # no request came
        assert pool.breaker.refused == 0
        assert select_one(pool) == 1


def test_once_closed_the_pool_serves_again_and_refills(up):
    with pool_on(up, probe_interval=0.2) as pool:
        open_breaker(pool, up)
        up.start()
        wait_until(lambda: pool.breaker.state == "closed", "the breaker closes")

        with ThreadPoolExecutor(8) as executor:
            assert list(executor.map(lambda _: select_one(pool), range(40))) == [1] * 40
        assert pool.get_stats()["pool_size"] >= 1
        assert pool.breaker.opened == 1


# --- through Django --------------------------------------------------------------------------------------------


@contextmanager
def app_database(pg: Postgres, *, probe_interval: float) -> Iterator[Any]:
    """Serve this thread's requests from a database wrapper of the product's engine on ``pg``, with the pool
    production configures (``database_from_url``), its connection given back at each request's end."""
    base = connections[DEFAULT_DB_ALIAS].settings_dict
    config = database_from_url(f"{pg.url('postgres')}?pool_max_size=4&pool_timeout=30", base_dir=Path("."))
    config["OPTIONS"]["pool"]["probe_interval"] = probe_interval
    wrapper = load_backend(config["ENGINE"]).DatabaseWrapper({**base, **config}, DEFAULT_DB_ALIAS)

    def request_boundary(**kwargs: object) -> None:
        wrapper.close_if_unusable_or_obsolete()

    original = connections[DEFAULT_DB_ALIAS]
    connections[DEFAULT_DB_ALIAS] = wrapper
    request_started.connect(request_boundary, dispatch_uid="test-breaker-database")
    request_finished.connect(request_boundary, dispatch_uid="test-breaker-database-end")
    try:
        yield wrapper
    finally:
        request_started.disconnect(dispatch_uid="test-breaker-database")
        request_finished.disconnect(dispatch_uid="test-breaker-database-end")
        connections[DEFAULT_DB_ALIAS] = original
        wrapper.close()
        wrapper.close_pool()


def test_requests_answer_the_json_503_without_an_attempt_while_open_and_200_once_the_server_is_back(api, acme, up):
    with app_database(up, probe_interval=3600) as wrapper:  # no probe due until the test shortens it
        assert api.get("/readyz").status_code == 200
        pool: CheckedConnectionPool = wrapper.pool
        up.stop()
        assert api.get("/readyz").status_code == 503  # this request's attempt failed: the breaker opened
        assert pool.breaker.is_open
        made = attempts(pool)

        answers = [api.get(url, **acme.platform_headers) for url in ("/api/v1/deployments", "/readyz") * 5]

        assert attempts(pool) == made
        for response in answers:
            assert response.status_code == 503, response.content[:200]
            assert response["Retry-After"] == str(RETRY_AFTER_SECONDS)
            assert response["Content-Type"].startswith("application/json")
        assert answers[0].json() == {"error": "Service unavailable: the database cannot be reached; retry later"}
        assert answers[1].json()["checks"]["database"].startswith("connection refused (at the last connection")

        up.start()
        pool.breaker.probe_interval = 0.2  # an attempt is due now: a request's or the pool's watcher's
        wait_until(lambda: pool.breaker.state != "open", "the breaker half-opens")

        assert [api.get("/readyz").status_code for _ in range(5)] == [200] * 5
        assert pool.breaker.state == "closed"
        assert pool.breaker.opened == 1
