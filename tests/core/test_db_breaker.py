"""The connection breaker of the PostgreSQL pools (``embedadmin/core/pgpool.py``), against a PostgreSQL server of
the test's own that it stops, starts and freezes (``SIGSTOP``: it accepts TCP connections and answers none).

While the server is down a request is refused at once, with no connection attempt (psycopg_pool's own counter of
attempts stays put); a half-open breaker lets exactly one request through to try; a successful attempt closes it
and the pool serves again. Through Django: the JSON 503 with ``Retry-After`` and ``/readyz`` without an attempt
while open, 200 once the server is back. Nothing here judges speed: attempts, probes and states are counted."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
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

pytestmark = pytest.mark.postgres

STOP_LOSS_S = 60  # how long a wait for a state may take before the test gives up: never a judgement of speed


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + STOP_LOSS_S
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


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
    with pool_on(up, probe_interval=0.2) as pool:
        open_breaker(pool, up)
        up.start()
        with frozen(up):
            wait_until(lambda: pool.breaker.state == "half-open", "the breaker half-opens")
            made, probes = attempts(pool), pool.breaker.probes
            barrier = threading.Barrier(threads)
            refused: list[BaseException] = []

            def request() -> Any:
                barrier.wait()
                try:
                    return pool.getconn()
                except DatabaseUnreachable as exc:
                    refused.append(exc)
                    return None

            with ThreadPoolExecutor(threads) as executor:
                futures = [executor.submit(request) for _ in range(threads)]
                # Every request but the probe is answered while the probe's attempt hangs on the frozen server.
                wait_until(lambda: len(refused) == threads - 1, "all but one request refused")
                assert pool.breaker.probes == probes + 1
                assert attempts(pool) == made + 1
                assert pool.breaker.state == "half-open"  # the probe is under way
                in_flight = [f for f in futures if not f.done()]
                assert len(in_flight) == 1

                os.kill(up.pid or 0, signal.SIGCONT)  # the server answers: the probe connects
                conn = in_flight[0].result(timeout=STOP_LOSS_S)

        assert conn is not None
        try:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        finally:
            pool.putconn(conn)
        assert pool.breaker.state == "closed"
        assert pool.breaker.probes == probes + 1


def test_a_probe_that_fails_keeps_it_open_for_another_interval(up):
    with pool_on(up, probe_interval=0.2) as pool:
        open_breaker(pool, up)
        wait_until(lambda: pool.breaker.state == "half-open", "the breaker half-opens")
        made = attempts(pool)

        with pytest.raises(DatabaseUnreachable):
            pool.getconn()  # the probe: refused by the stopped server

        assert attempts(pool) == made + 1
        assert pool.breaker.probes == 1
        assert pool.breaker.opened == 1  # still the same opening
        assert pool.breaker.is_open


def test_the_probe_that_succeeds_closes_it_and_the_pool_serves_again(up):
    with pool_on(up, probe_interval=0.2) as pool:
        open_breaker(pool, up)
        up.start()
        wait_until(lambda: pool.breaker.state == "half-open", "the breaker half-opens")

        assert select_one(pool) == 1  # the probe connects, then the request gets a connection of the pool

        assert pool.breaker.state == "closed"
        assert pool.breaker.probes == 1
        with ThreadPoolExecutor(8) as executor:
            assert list(executor.map(lambda _: select_one(pool), range(40))) == [1] * 40
        assert pool.get_stats()["pool_size"] >= 1


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
        pool.breaker.probe_interval = 0.2
        wait_until(lambda: pool.breaker.state == "half-open", "the breaker half-opens")

        assert [api.get("/readyz").status_code for _ in range(5)] == [200] * 5
        assert pool.breaker.state == "closed"
        assert pool.breaker.opened == 1
