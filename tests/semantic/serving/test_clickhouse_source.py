"""The ClickHouse data source (embedadmin/semantic/sources/clickhouse.py) on chDB, the ClickHouse engine embedded in
this process, through the same clickhouse-connect client a server is queried with: server-side parameters, types,
read-only queries, timeouts, cancel, and what its writer renders; and a server that cannot be reached over HTTP."""

from __future__ import annotations

import datetime as dt
import socket
import threading
from decimal import Decimal
from typing import Any

import pytest
import sqlglot
from sqlglot import exp

from embedadmin.semantic.errors import DataSourceError, QueryTimeout
from embedadmin.semantic.sources import registry
from embedadmin.semantic.sources.base import CancelScope, DataSourceUnavailable, QueryCancelled
from embedadmin.semantic.sources.clickhouse import WRITER, ClickHouseSource, bind, open_source
from tests.semantic.clickhouse_support import ClickHouseExecutor
from tests.waiting import wait_until

LONG_QUERY = "SELECT count() FROM numbers(1000000000000) WHERE sipHash64(number) = 0"


@pytest.fixture
def source(click: ClickHouseExecutor) -> Any:
    source = open_source(click.url)
    yield source
    source.close()


def test_the_registry_opens_clickhouse_urls_in_the_clickhouse_dialect() -> None:
    assert registry.dialect_of("clickhouse://reader:secret@127.0.0.1:8123/shop") == "clickhouse"
    assert registry.dialect_of("clickhouses://reader@warehouse.example:8443/shop") == "clickhouse"
    assert registry.dialect_of("chdb:///var/shop") == "clickhouse"
    assert registry.writer("clickhouse") is WRITER


def test_values_are_bound_by_the_server_with_a_type_from_their_python_type(source: ClickHouseSource) -> None:
    values = ["it's \\ a\ttab", 42, 2.5, Decimal("12.34"), True, None, dt.datetime(2024, 3, 31, 1, 30, 0, 123456)]
    values.append(dt.date(2024, 2, 29))
    sql = "SELECT " + ", ".join(f"{{p{i}:_}} AS c{i}" for i in range(1, len(values) + 1))

    result = source.execute(sql, values, timeout_s=10)

    assert result.rows == [tuple(values)]
    assert result.types == ["string", "integer", "float", "decimal", "boolean", "string", "timestamp", "date"]


def test_parameters_without_their_placeholders_are_refused_never_formatted_into_the_sql() -> None:
    # clickhouse-connect formats values into the text when a query has no {name:Type} placeholder.
    with pytest.raises(DataSourceError, match="do not match"):
        bind("SELECT %(p1)s", ["x'; DROP TABLE orders; --"])
    with pytest.raises(DataSourceError, match=r"\$2 has no value"):
        bind("SELECT {p2:_}", ["a"])
    assert bind("SELECT {p1:_}, {p1:_}", ["a"]) == ("SELECT {p1:String}, {p1:String}", {"p1": "a"})


def test_clickhouse_types_are_read_as_value_types(source: ClickHouseSource) -> None:
    sql = """
        SELECT toInt32(1) AS i, toUInt64(2) AS u, CAST(1.5 AS Nullable(Decimal(18, 2))) AS d, toFloat32(0.5) AS f,
               CAST('a' AS LowCardinality(Nullable(String))) AS s, toDate('2024-01-02') AS day,
               toDateTime64('2024-01-02 03:04:05.678', 3, 'Europe/Berlin') AS berlin, true AS b,
               toUUID('00000000-0000-0000-0000-000000000001') AS id, [1, 2] AS a
    """

    result = source.execute(sql, [], timeout_s=10)

    assert result.columns == ["i", "u", "d", "f", "s", "day", "berlin", "b", "id", "a"]
    assert result.types == [
        "integer", "integer", "decimal", "float", "string", "date", "timestamp", "boolean", "string", "other"
    ]  # fmt: skip
    row = result.rows[0]
    assert row[:6] == (1, 2, Decimal("1.50"), 0.5, "a", dt.date(2024, 1, 2))
    # A time with a zone of its own is given as its UTC wall time (PostgreSQL's timestamptz in a UTC session).
    assert row[6] == dt.datetime(2024, 1, 2, 2, 4, 5, 678000)


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE scratch (x Int32) ENGINE = Memory",
        "INSERT INTO orders (id) VALUES (99)",
        "SELECT 1 SETTINGS readonly = 0",
    ],
)
def test_nothing_can_be_written_and_the_settings_stay(source: ClickHouseSource, click: ClickHouseExecutor, sql: str):
    with pytest.raises(DataSourceError):
        source.execute(sql, [], timeout_s=10)

    assert click.run("SELECT count() FROM orders")[1] == [(10,)]


def test_every_query_runs_in_utc_with_outer_joins_giving_nulls(source: ClickHouseSource) -> None:
    sql = """
        SELECT timezone(), toString(toDateTime64('2024-06-01 12:00:00', 0)), b.y
        FROM (SELECT 1 AS x) AS a LEFT JOIN (SELECT 2 AS x, 5 AS y) AS b ON a.x = b.x
    """

    assert source.execute(sql, [], timeout_s=10).rows == [("UTC", "2024-06-01 12:00:00", None)]


def test_a_query_past_its_timeout_is_stopped(source: ClickHouseSource) -> None:
    with pytest.raises(QueryTimeout):
        source.execute(LONG_QUERY, [], timeout_s=0.5)

    assert source.execute("SELECT 1", [], timeout_s=5).rows == [(1,)]


def test_cancel_kills_the_running_query_and_the_source_stays_usable(source: ClickHouseSource) -> None:
    scope = CancelScope()
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            source.execute(LONG_QUERY, [], timeout_s=60, cancel=scope)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    wait_until(
        lambda: (
            source.execute(
                "SELECT count() FROM system.processes WHERE query LIKE {p1:_}", ["%sipHash64(number) = 0%"], timeout_s=5
            ).rows
            != [(0,)]
        ),
        what="the long query to be running",
    )

    scope.cancel()
    thread.join(timeout=30)

    assert len(outcome) == 1
    assert isinstance(outcome[0], QueryCancelled)
    assert source.execute("SELECT 2", [], timeout_s=5).rows == [(2,)]


def test_a_cancelled_scope_runs_nothing(source: ClickHouseSource) -> None:
    scope = CancelScope()
    scope.cancel()

    with pytest.raises(QueryCancelled):
        source.execute("SELECT 1", [], timeout_s=5, cancel=scope)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_server_that_cannot_be_reached_is_unavailable() -> None:
    source = open_source(f"clickhouse://reader:secret@127.0.0.1:{_free_port()}/shop?connect_timeout=2")
    try:
        with pytest.raises(DataSourceUnavailable, match="Data source is unavailable"):
            source.execute("SELECT 1", [], timeout_s=5)
    finally:
        source.close()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("clickhouse://reader@127.0.0.1:8123/shop?compress=zstd", "Unsupported ClickHouse URL option: compress"),
        ("clickhouse:///shop", "names no ClickHouse host"),
        ("chdb://", "names no chDB directory"),
        ("clickhouse://127.0.0.1/shop?pool_max_size=0", "pool_max_size must be at least 1"),
        ("clickhouse://127.0.0.1/shop?pool_timeout=soon", "pool_timeout must be a number"),
    ],
)
def test_bad_urls_are_refused_with_a_reason(url: str, message: str) -> None:
    with pytest.raises(DataSourceError, match=message):
        open_source(url)


# --- What the writer renders, run on the engine.


def _render(sql: str) -> str:
    return sqlglot.parse_one(sql, read="postgres").sql(dialect=WRITER)


MOMENT = "TIMESTAMP '2024-05-15 10:20:30.123456'"  # a Wednesday


@pytest.mark.parametrize(
    ("unit", "expected"),
    [
        ("second", dt.datetime(2024, 5, 15, 10, 20, 30)),
        ("minute", dt.datetime(2024, 5, 15, 10, 20)),
        ("hour", dt.datetime(2024, 5, 15, 10)),
        ("day", dt.datetime(2024, 5, 15)),
        ("week", dt.datetime(2024, 5, 13)),  # Monday
        ("month", dt.datetime(2024, 5, 1)),
        ("quarter", dt.datetime(2024, 4, 1)),
        ("year", dt.datetime(2024, 1, 1)),
    ],
)
def test_truncation_to_each_granularity_gives_a_timestamp(source: ClickHouseSource, unit: str, expected) -> None:
    tree = exp.select(exp.TimestampTrunc(this=sqlglot.parse_one(MOMENT), unit=exp.var(unit.upper())))

    result = source.execute(tree.sql(dialect=WRITER), [], timeout_s=5)

    assert result.rows == [(expected,)]
    assert result.types == ["timestamp"]


def test_local_time_is_the_wall_time_of_the_zone_across_daylight_saving(source: ClickHouseSource) -> None:
    sql = _render(
        "SELECT CAST(TIMESTAMP '2024-03-31 00:30:00' AS TIMESTAMPTZ) AT TIME ZONE 'Europe/Berlin', "
        "CAST(TIMESTAMP '2024-03-31 01:30:00' AS TIMESTAMPTZ) AT TIME ZONE 'Europe/Berlin'"
    )

    assert source.execute(sql, [], timeout_s=5).rows == [
        (dt.datetime(2024, 3, 31, 1, 30), dt.datetime(2024, 3, 31, 3, 30))
    ]


def test_descending_order_puts_nulls_first_as_postgresql_does(source: ClickHouseSource) -> None:
    tree = (
        exp.select("x")
        .from_(sqlglot.parse_one("(SELECT 1 AS x UNION ALL SELECT NULL UNION ALL SELECT 2) AS t", read="clickhouse"))
        .order_by(exp.Ordered(this=exp.column("x"), desc=True))
    )

    assert source.execute(tree.sql(dialect=WRITER), [], timeout_s=5).rows == [(None,), (2,), (1,)]


def test_integer_division_as_postgresql_means_it(source: ClickHouseSource) -> None:
    sql = _render(
        "SELECT 7 / 2, CAST(7 AS INT) / 2, 7.0 / 2, COUNT(DISTINCT x) FROM (SELECT 1 AS x UNION ALL SELECT 1) AS t"
    )

    assert source.execute(sql, [], timeout_s=5).rows == [(3, 3, 3.5, 1)]


def test_a_second_chdb_directory_in_the_process_is_a_configuration_fault(click: ClickHouseExecutor, tmp_path) -> None:
    other = open_source(f"chdb:///{tmp_path}")
    try:
        with pytest.raises(DataSourceError, match="chDB opens one data directory per process") as refusal:
            other.execute("SELECT 1", [], timeout_s=5)
        assert not isinstance(refusal.value, DataSourceUnavailable)
    finally:
        other.close()
