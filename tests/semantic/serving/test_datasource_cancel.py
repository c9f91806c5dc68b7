"""Cancelling a running statement in the data source itself (CancelScope), on a real PostgreSQL and DuckDB:
interrupted within a second of cancel, and the connection (pool, thread cursor) usable right after."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import psycopg
import pytest

from embedadmin.accounts.services import duckdb_url
from embedadmin.semantic.sources.base import CancelScope, DataSource, QueryCancelled, QueryTimeout
from embedadmin.semantic.sources.registry import close_data_sources, get_data_source
from tests.waiting import wait_until

POSTGRES_URL = os.environ.get("TEST_DATABASE_URL", "postgresql://embedadmin:embedadmin@127.0.0.1:5432/embedadmin")
# A DuckDB statement that runs for many seconds (a large cross join), interruptible.
DUCK_SLOW = "SELECT count(*) FROM range(100000000) a, range(1000) b WHERE a.range + b.range = -1"


@pytest.fixture
def pg_name() -> Iterator[str]:
    yield f"ea-cancel-{uuid.uuid4().hex[:8]}"
    close_data_sources()


@pytest.fixture
def pg_source(pg_name: str) -> DataSource:
    return get_data_source(f"{POSTGRES_URL}?application_name={pg_name}&pool_max_size=2")


@pytest.fixture
def duck_source(tmp_path: Path) -> Iterator[DataSource]:
    path = tmp_path / "empty.duckdb"
    duckdb.connect(str(path)).close()
    yield get_data_source(duckdb_url(path))
    close_data_sources()


def _running(name: str) -> list[str]:
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT query FROM pg_stat_activity WHERE application_name = %s AND state = 'active'", [name]
        ).fetchall()
    return [row[0] for row in rows]


def _until_sleeping(name: str, count: int = 1) -> None:
    """Wait until ``count`` statements of ``name`` run ``pg_sleep`` in the server."""
    wait_until(
        lambda: sum("pg_sleep" in query for query in _running(name)) >= count,
        f"{count} pg_sleep statement(s) of {name} running in the server",
        every=0.05,
    )


def _until_duckdb_runs(source: DataSource) -> None:
    """Wait until a thread runs a statement on ``source``. DuckDB shows no sign of a statement under way inside the
    engine: once the thread's cursor holds it, the statement is given half a second (real time) to get in there."""
    wait_until(lambda: any(cursor.running is not None for cursor in source._cursors), "a thread runs its statement")
    time.sleep(0.5)


def _run_and_cancel(
    source: DataSource, sql: str, *, once_running: Callable[[], None]
) -> tuple[BaseException | None, float]:
    """Run ``sql`` on a thread, cancel its scope once ``once_running`` returns (the statement runs); what it raised
    and how long after the cancel."""
    scope = CancelScope()
    outcome: list[BaseException | None] = []
    ended = threading.Event()

    def run() -> None:
        try:
            source.execute(sql, [], timeout_s=30, cancel=scope)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)
        ended.set()

    thread = threading.Thread(target=run)
    thread.start()
    once_running()
    cancelled_at = time.monotonic()
    scope.cancel()
    assert ended.wait(10), "the query was not interrupted"
    elapsed = time.monotonic() - cancelled_at
    thread.join()
    return outcome[0], elapsed


def test_postgres_cancel_stops_the_statement_in_the_server_within_a_second(pg_source, pg_name):
    # cancelled once it runs in the server
    error, elapsed = _run_and_cancel(pg_source, "SELECT pg_sleep(10)", once_running=lambda: _until_sleeping(pg_name))

    assert isinstance(error, QueryCancelled), error
    assert str(error) == "Query was cancelled"
    assert elapsed < 1.0, elapsed
    assert not any("pg_sleep" in q for q in _running(pg_name))  # and is not any more
    # The pool's connections (both of them) keep working.
    for _ in range(4):
        assert pg_source.execute("SELECT 41 + 1", [], timeout_s=5).rows == [(42,)]


def test_duckdb_cancel_interrupts_the_query_within_a_second_and_the_thread_queries_again(duck_source):
    error, elapsed = _run_and_cancel(duck_source, DUCK_SLOW, once_running=lambda: _until_duckdb_runs(duck_source))

    assert isinstance(error, QueryCancelled), error
    assert elapsed < 1.0, elapsed
    assert duck_source.execute("SELECT 42", [], timeout_s=5).rows == [(42,)]


@pytest.mark.parametrize("which", ["pg_source", "duck_source"])
def test_a_cancelled_scope_runs_no_further_statement(request, which):
    source = request.getfixturevalue(which)
    scope = CancelScope()
    scope.cancel()
    scope.cancel()  # twice is fine

    with pytest.raises(QueryCancelled):
        source.execute("SELECT 1", [], timeout_s=5, cancel=scope)
    assert scope.cancelled


@pytest.mark.parametrize("which", ["pg_source", "duck_source"])
def test_a_cancel_after_the_statement_ended_touches_nothing_else(request, which):
    source = request.getfixturevalue(which)
    scope = CancelScope()
    assert source.execute("SELECT 1", [], timeout_s=5, cancel=scope).rows == [(1,)]
    scope.cancel()
    time.sleep(0.2)  # a stray interrupt, were one sent, would land meanwhile: nothing to wait on but time

    results = [source.execute("SELECT 2", [], timeout_s=5).rows for _ in range(5)]

    assert results == [[(2,)]] * 5


def test_one_scope_cancels_statements_running_at_once_on_several_connections(pg_source, pg_name):
    scope = CancelScope()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            pg_source.execute("SELECT pg_sleep(10)", [], timeout_s=30, cancel=scope)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    _until_sleeping(pg_name, count=2)
    started = time.monotonic()
    scope.cancel()
    for thread in threads:
        thread.join(5)
    assert time.monotonic() - started < 1.0
    assert len(errors) == 2
    assert all(isinstance(e, QueryCancelled) for e in errors)


def test_a_timeout_is_still_a_timeout_with_a_scope(pg_source):
    with pytest.raises(QueryTimeout):
        pg_source.execute("SELECT pg_sleep(5)", [], timeout_s=0.2, cancel=CancelScope())
    assert pg_source.execute("SELECT 3", [], timeout_s=5).rows == [(3,)]
