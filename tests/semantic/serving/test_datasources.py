"""Data sources against a real DuckDB file and a real PostgreSQL database."""

from __future__ import annotations

import datetime as dt
import os
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path

import duckdb
import psycopg
import pytest
from django.conf import settings

from embedadmin.accounts.services import duckdb_url
from embedadmin.semantic.sources.base import DataSource, DataSourceError, QueryResult, QueryTimeout, value_type
from embedadmin.semantic.sources.duckdb import DuckDBSource
from embedadmin.semantic.sources.registry import close_data_sources, get_data_source
from tests.waiting import wait_until

POSTGRES_URL = os.environ.get("TEST_DATABASE_URL", "postgresql://embedadmin:embedadmin@127.0.0.1:5432/embedadmin")
HOSTILE = "O'Brien'); DROP TABLE people; --"
TYPED_QUERY = (
    "SELECT id, name, score, ratio, active, born, seen_at, seen_at_tz FROM {table} WHERE id = $1 AND name = $2"
)
EXPECTED_TYPES = ["integer", "string", "decimal", "float", "boolean", "date", "timestamp", "timestamptz"]
EXPECTED_ROW = (
    1,
    "Ada",
    Decimal("12.50"),
    0.25,
    True,
    dt.date(1990, 5, 17),
    dt.datetime(2024, 3, 1, 10, 30),
    dt.datetime(2024, 3, 1, 9, 30, tzinfo=dt.UTC),
)
SEED_SQL = """
CREATE TABLE {table} (
    id BIGINT, name VARCHAR(200), score DECIMAL(10, 2), ratio DOUBLE PRECISION, active BOOLEAN,
    born DATE, seen_at TIMESTAMP, seen_at_tz TIMESTAMP WITH TIME ZONE
);
INSERT INTO {table} VALUES
    (1, 'Ada', 12.50, 0.25, true, '1990-05-17', '2024-03-01 10:30:00', '2024-03-01 10:30:00+01'),
    (2, 'O''Brien''); DROP TABLE people; --', 3.00, 1.5, false, NULL, NULL, NULL),
    (3, 'Grace', NULL, NULL, NULL, '1906-12-09', '2024-03-02 00:00:00', '2024-03-02 00:00:00+00');
"""


@pytest.fixture
def duckdb_file(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "people.duckdb"
    connection = duckdb.connect(str(path))
    connection.execute(SEED_SQL.format(table="people"))
    connection.close()
    yield path
    close_data_sources()


@pytest.fixture
def duck_source(duckdb_file: Path) -> DataSource:
    return get_data_source(duckdb_url(duckdb_file))


@pytest.fixture
def pg_schema() -> Iterator[str]:
    schema = f"ds_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        admin.execute(SEED_SQL.format(table=f"{schema}.people"))
    yield schema
    close_data_sources()
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def pg_source(pg_schema: str) -> DataSource:
    return get_data_source(f"{POSTGRES_URL}?application_name={pg_schema}")


# --- both dialects -----------------------------------------------------------------------------------


@pytest.fixture(params=["duckdb", "postgres"])
def source_and_table(request) -> tuple[DataSource, str]:
    """The same seeded table in each dialect."""
    if request.param == "duckdb":
        return request.getfixturevalue("duck_source"), "people"
    return request.getfixturevalue("pg_source"), f"{request.getfixturevalue('pg_schema')}.people"


def test_results_come_back_with_columns_value_types_and_python_values(source_and_table):
    source, table = source_and_table

    result = source.execute(TYPED_QUERY.format(table=table), [1, "Ada"], timeout_s=5)

    assert result == QueryResult(
        columns=["id", "name", "score", "ratio", "active", "born", "seen_at", "seen_at_tz"],
        types=EXPECTED_TYPES,
        rows=[EXPECTED_ROW],
    )


def test_dialect_names_the_sql_flavour(duck_source, pg_source):
    assert (duck_source.dialect, pg_source.dialect) == ("duckdb", "postgres")


def test_bound_values_with_quotes_and_sql_are_inert(source_and_table):
    source, table = source_and_table

    hit = source.execute(f"SELECT id FROM {table} WHERE name = $1", [HOSTILE], timeout_s=5)
    miss = source.execute(f"SELECT id FROM {table} WHERE name = $1", ["x' OR '1'='1"], timeout_s=5)
    still_there = source.execute(f"SELECT count(*) AS n FROM {table}", [], timeout_s=5)

    assert hit.rows == [(2,)]
    assert miss.rows == []
    assert still_there.rows == [(3,)]


def test_percent_signs_in_sql_are_not_placeholders(source_and_table):
    source, table = source_and_table

    result = source.execute(f"SELECT name FROM {table} WHERE name LIKE 'G%' AND 7 % 4 = $1", [3], timeout_s=5)

    assert result.rows == [("Grace",)]


def test_writes_are_refused(source_and_table):
    source, table = source_and_table

    with pytest.raises(DataSourceError):
        source.execute(f"DELETE FROM {table}", [], timeout_s=5)
    with pytest.raises(DataSourceError):
        source.execute("CREATE TABLE intruder (i INTEGER)", [], timeout_s=5)

    assert source.execute(f"SELECT count(*) FROM {table}", [], timeout_s=5).rows == [(3,)]


def test_a_failing_query_raises_a_one_line_message(source_and_table):
    source, table = source_and_table

    with pytest.raises(DataSourceError) as caught:
        source.execute(f"SELECT nope FROM {table}", [], timeout_s=5)

    message = str(caught.value)
    assert "nope" in message
    assert "\n" not in message
    assert "Traceback" not in message


def test_concurrent_queries_from_threads_each_get_their_own_answer(source_and_table):
    source, table = source_and_table
    names = {1: "Ada", 2: HOSTILE, 3: "Grace"}

    def lookup(i: int) -> tuple[int, str]:
        person = i % 3 + 1
        result = source.execute(f"SELECT name FROM {table} WHERE id = $1", [person], timeout_s=10)
        return person, result.rows[0][0]

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lookup, range(200)))

    assert len(answers) == 200
    assert all(name == names[person] for person, name in answers)


SLOW_QUERIES = {
    "duckdb": "SELECT count(*) FROM range(100000000000) t(a) WHERE a % 7 = 3",
    "postgres": "SELECT pg_sleep(30)",
}


def test_a_slow_query_is_interrupted_at_its_timeout_and_the_source_keeps_working(source_and_table):
    source, table = source_and_table

    started = time.monotonic()
    with pytest.raises(QueryTimeout) as caught:
        source.execute(SLOW_QUERIES[source.dialect], [], timeout_s=0.5)
    elapsed = time.monotonic() - started

    assert 0.45 <= elapsed < 1.5
    assert str(caught.value) == "Query timeout: the query ran longer than 0.5 s and was stopped"
    assert source.execute(f"SELECT count(*) FROM {table}", [], timeout_s=5).rows == [(3,)]


def _until_running(source: DataSource, table: str) -> None:
    """Wait until another thread runs a statement on ``source``: in the server for PostgreSQL (the sessions of the
    ``pg_source`` fixture are named after the schema of ``table``); for DuckDB, which shows no sign of a statement
    under way inside the engine, once that thread's cursor holds it."""
    if source.dialect == "postgres":
        application_name = table.split(".")[0]
        query = "SELECT 1 FROM pg_stat_activity WHERE application_name = %s AND state = 'active'"

        def running() -> bool:
            with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
                return bool(admin.execute(query, [application_name]).fetchall())

        wait_until(running, "the slow statement runs in the server", every=0.05)
    else:
        wait_until(lambda: any(cursor.running is not None for cursor in source._cursors), "a thread runs its statement")


def test_a_slow_query_does_not_hold_up_others(source_and_table):
    source, table = source_and_table
    slow_done = threading.Event()

    def slow() -> None:
        with pytest.raises(QueryTimeout):
            source.execute(SLOW_QUERIES[source.dialect], [], timeout_s=2)
        slow_done.set()

    worker = threading.Thread(target=slow)
    worker.start()
    _until_running(source, table)
    started = time.monotonic()
    result = source.execute(f"SELECT count(*) FROM {table}", [], timeout_s=5)
    fast_elapsed = time.monotonic() - started
    worker.join()

    assert result.rows == [(3,)]
    assert fast_elapsed < 0.5
    assert slow_done.is_set()


# --- DuckDB ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "fragment"),
    [
        ("SELECT * FROM read_csv('/etc/passwd')", "file system operations are disabled"),
        ("SELECT * FROM read_text('/etc/hostname')", "file system operations are disabled"),
        ("SELECT * FROM glob('/etc/*')", "file system operations are disabled"),
        ("SELECT * FROM read_parquet('https://example.com/data.parquet')", "file system operations are disabled"),
        ("INSTALL httpfs", "file system operations are disabled"),
        ("LOAD httpfs", "Loading external extensions is disabled"),
        ("ATTACH '/tmp/other.duckdb' AS other", "file system operations are disabled"),
        ("COPY people TO '/tmp/stolen.csv'", "file system operations are disabled"),
        ("SET enable_external_access = true", "the configuration has been locked"),
        ("SET lock_configuration = false", "the configuration has been locked"),
        ("SET TimeZone = 'Europe/Paris'", "the configuration has been locked"),
    ],
)
def test_duckdb_queries_cannot_reach_files_the_network_or_settings(duck_source, sql, fragment):
    with pytest.raises(DataSourceError) as caught:
        duck_source.execute(sql, [], timeout_s=5)

    assert fragment in str(caught.value)
    assert not Path("/tmp/stolen.csv").exists()


def test_duckdb_source_is_shared_per_url_and_session_time_zone_is_utc(duckdb_file):
    first = get_data_source(duckdb_url(duckdb_file))
    second = get_data_source(duckdb_url(duckdb_file))

    result = first.execute("SELECT current_setting('TimeZone')", [], timeout_s=5)

    assert first is second
    assert result.rows == [("UTC",)]


def test_duckdb_url_paths_follow_the_database_url_convention(tmp_path):
    relative = get_data_source("duckdb:///var/demo.duckdb")
    absolute = get_data_source(duckdb_url(tmp_path / "x.duckdb"))

    assert isinstance(relative, DuckDBSource)
    assert isinstance(absolute, DuckDBSource)
    assert relative.path == (Path(settings.BASE_DIR) / "var" / "demo.duckdb").resolve()
    assert absolute.path == tmp_path / "x.duckdb"
    close_data_sources()


def test_a_replaced_duckdb_file_is_reopened(duck_source, duckdb_file):
    assert duck_source.execute("SELECT count(*) FROM people", [], timeout_s=5).rows == [(3,)]
    replacement = duckdb_file.with_suffix(".new")
    connection = duckdb.connect(str(replacement))
    connection.execute("CREATE TABLE people AS SELECT 42 AS id")
    connection.close()

    os.replace(replacement, duckdb_file)

    assert duck_source.execute("SELECT id FROM people", [], timeout_s=5).rows == [(42,)]


def test_duckdb_threads_keep_their_cursor_and_a_timeout_retires_it(duck_source):
    """A cursor is kept per thread between queries; the one a timeout interrupted is not used again, so the
    interrupt cannot reach the thread's next query."""
    for _ in range(5):
        assert duck_source.execute("SELECT count(*) FROM people", [], timeout_s=5).rows == [(3,)]
    kept = list(duck_source._cursors)
    other = threading.Thread(target=lambda: duck_source.execute("SELECT 1", [], timeout_s=5))
    other.start()
    other.join()
    assert len(kept) == 1
    assert len(duck_source._cursors) == 2

    with pytest.raises(QueryTimeout):
        duck_source.execute(SLOW_QUERIES["duckdb"], [], timeout_s=0.2)
    assert kept[0] not in duck_source._cursors
    for _ in range(5):
        assert duck_source.execute("SELECT count(*) FROM people", [], timeout_s=5).rows == [(3,)]


def test_a_missing_duckdb_file_is_a_data_source_error(tmp_path):
    source = get_data_source(duckdb_url(tmp_path / "absent.duckdb"))

    with pytest.raises(DataSourceError) as caught:
        source.execute("SELECT 1", [], timeout_s=5)

    assert str(caught.value) == "Data source file is not available"
    close_data_sources()


# --- PostgreSQL --------------------------------------------------------------------------------------


def test_postgres_refuses_a_second_statement(pg_source, pg_schema):
    with pytest.raises(DataSourceError) as caught:
        pg_source.execute(f"SELECT 1; DROP TABLE {pg_schema}.people", [], timeout_s=5)

    assert str(caught.value) == "cannot insert multiple commands into a prepared statement"
    assert pg_source.execute(f"SELECT count(*) FROM {pg_schema}.people", [], timeout_s=5).rows == [(3,)]


def test_postgres_runs_in_read_only_transactions_with_the_query_timeout(pg_source):
    result = pg_source.execute(
        "SELECT current_setting('transaction_read_only'), current_setting('statement_timeout'), "
        "current_setting('TimeZone')",
        [],
        timeout_s=2.5,
    )

    assert result.rows == [("on", "2500ms", "UTC")]


def test_postgres_timeout_does_not_leak_into_the_next_query(pg_source):
    with pytest.raises(QueryTimeout):
        pg_source.execute("SELECT pg_sleep(5)", [], timeout_s=0.2)

    result = pg_source.execute("SELECT pg_sleep(0.4), current_setting('statement_timeout')", [], timeout_s=3)

    assert result.rows == [("", "3s")]


def test_postgres_unreachable_server_is_a_safe_error():
    source = get_data_source("postgresql://nobody:secret-password@127.0.0.1:1/none?pool_min_size=0")

    with pytest.raises(DataSourceError) as caught:
        source.execute("SELECT 1", [], timeout_s=1)

    assert str(caught.value) in {
        "Data source is unavailable",
        "Data source is busy: no connection became free in time",
    }
    assert "secret-password" not in str(caught.value)
    close_data_sources()


# --- URLs and types ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("cobol://x/y", "Unsupported data source URL: use duckdb:///path or postgresql://..."),
        ("oracle://x/y", "oracle data sources are not queried by this server yet"),
        ("duckdb:///", "Data source URL names no DuckDB file"),
        ("duckdb:///x.duckdb?evil=1", "Unsupported DuckDB URL option: evil"),
        ("postgresql://h/db?pool_max_size=many", "pool_min_size and pool_max_size must be integers"),
    ],
)
def test_bad_urls_are_refused(url, message):
    with pytest.raises(DataSourceError) as caught:
        get_data_source(url)

    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("BIGINT", "integer"),
        ("HUGEINT", "integer"),
        ("int4", "integer"),
        ("DECIMAL(18,3)", "decimal"),
        ("numeric", "decimal"),
        ("DOUBLE", "float"),
        ("float8", "float"),
        ("VARCHAR", "string"),
        ("varchar(3)", "string"),
        ("TIMESTAMP WITH TIME ZONE", "timestamptz"),
        ("timestamp", "timestamp"),
        ("DATE", "date"),
        ("INTERVAL", "interval"),
        ("jsonb", "json"),
        ("BOOLEAN", "boolean"),
        ("INTEGER[]", "other"),
        ("STRUCT(a INTEGER)", "other"),
    ],
)
def test_value_type_names(name, expected):
    assert value_type(name) == expected


def test_closing_a_duckdb_source_while_a_query_runs_stops_the_query_and_never_raises(duck_source):
    """Closing the shared sources (a process's shutdown, a test's teardown) while a request's query runs on another
    thread: DuckDB refuses to close a cursor busy with a call ("connection is busy with another call"), which made
    closing raise. The running query is interrupted instead, and closing completes."""
    running = threading.Event()
    outcome: list[BaseException | None] = []

    def slow() -> None:
        running.set()
        try:
            duck_source.execute(SLOW_QUERIES["duckdb"], [], timeout_s=30)
            outcome.append(None)
        except BaseException as exc:  # what the query ended with is the assertion
            outcome.append(exc)

    worker = threading.Thread(target=slow)
    worker.start()
    running.wait(5)
    _until_running(duck_source, "people")
    time.sleep(0.3)  # DuckDB shows no sign of a statement inside the engine: give it a moment (real time) to get in

    close_data_sources()
    worker.join(10)

    assert not worker.is_alive()
    assert len(outcome) == 1
    assert isinstance(outcome[0], DataSourceError)
