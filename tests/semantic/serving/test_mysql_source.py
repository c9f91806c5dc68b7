"""The ``mysql://`` data source against a real MariaDB server (``scripts/test-services.sh``: TEST_MYSQL_URL), and a
deployment whose data source is MariaDB answering ``/v1/load`` over HTTP as the same deployment on PostgreSQL does.

What the Core Data API's queries give on MariaDB is checked by the cross-database tests (the ``executor`` fixture
runs each on DuckDB, PostgreSQL and MariaDB); here: the source itself (types, bound values, read-only, time limits,
cancel, outages, the pool) and the writer's SQL for what MySQL says differently."""

# ruff: noqa: F811  (the fixtures imported from http_support are redefined as test arguments, as pytest wants)

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from urllib.parse import urlsplit

import pymysql
import pytest
import sqlglot
from sqlglot import exp

from embedadmin.accounts.services import deployment_configure
from embedadmin.semantic.errors import DataSourceError, QueryError, QueryTimeout
from embedadmin.semantic.sources.base import CancelScope, DataSourceUnavailable, QueryCancelled, QueryResult
from embedadmin.semantic.sources.mysql import WRITER, MySQLSource, open_source
from embedadmin.semantic.sources.registry import close_data_sources, dialect_of, get_data_source, writer
from tests.semantic.conftest import SHOP, run_query
from tests.semantic.databases import MySQLExecutor, PostgresExecutor, mysql_database, mysql_url
from tests.semantic.http_support import CoreApi, core, demo_duckdb, fresh_semantic_state  # noqa: F401
from tests.waiting import wait_until

pytestmark = [pytest.mark.postgres]

HOSTILE = "O'Brien'); DROP TABLE people; --"
PEOPLE = (
    "id BIGINT PRIMARY KEY, name VARCHAR(200), score DECIMAL(10, 2), ratio DOUBLE, active BOOLEAN, born DATE, "
    "seen_at DATETIME, seen_at_ts TIMESTAMP NULL, opens TIME, photo VARBINARY(16)"
)
ROWS = [
    (1, "Ada", Decimal("12.50"), 0.25, True, dt.date(1990, 5, 17), dt.datetime(2024, 3, 1, 10, 30), None, None, None),
    (2, HOSTILE, Decimal("3.00"), 1.5, False, None, None, None, None, None),
    (3, "Grace", None, None, None, dt.date(1906, 12, 9), dt.datetime(2024, 3, 2), None, None, None),
]
# A statement that runs for many seconds and stops as soon as it is killed (SLEEP would answer 1 instead).
SLOW = (
    "SELECT count(*) AS n FROM information_schema.columns AS a, information_schema.columns AS b, "
    "information_schema.columns AS c, information_schema.columns AS d"
)


def admin() -> pymysql.connections.Connection:
    parts = urlsplit(mysql_url())
    return pymysql.connect(
        host=parts.hostname, port=parts.port, user=parts.username, password=parts.password or "", autocommit=True
    )


@pytest.fixture(scope="module")
def people_url() -> Iterator[str]:
    """A database with one ``people`` table; ``seen_at_ts`` (a TIMESTAMP: an instant) written in UTC+01:00."""
    with mysql_database({"people": (PEOPLE, ROWS)}) as url:
        with admin() as connection, connection.cursor() as cursor:
            cursor.execute(f"USE `{url.rsplit('/', 1)[1]}`")
            cursor.execute("SET time_zone = '+01:00'")
            cursor.execute("UPDATE people SET seen_at_ts = '2024-03-01 10:30:00', opens = '09:15:00', photo = x'cafe'")
            cursor.execute("UPDATE people SET seen_at_ts = NULL, opens = NULL, photo = NULL WHERE id <> 1")
        yield url


@pytest.fixture
def source(people_url: str) -> Iterator[MySQLSource]:
    opened = open_source(f"{people_url}?pool_max_size=4&connect_timeout=5")
    yield opened
    opened.close()


def mysql_sql(postgres_sql: str) -> str:
    """SQL written for PostgreSQL (``$1`` parameters), as the source's writer renders it for MySQL."""
    return sqlglot.parse_one(postgres_sql, read="postgres").sql(dialect=WRITER)


def running(statement_start: str) -> bool:
    with admin() as connection, connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM information_schema.processlist WHERE info LIKE %s AND id <> CONNECTION_ID()",
            (f"%{statement_start}%",),
        )
        row = cursor.fetchone()
    return bool(row and row[0])


# --- values, types, parameters -----------------------------------------------------------------------


def test_results_come_back_with_columns_value_types_and_python_values(source):
    sql = mysql_sql("SELECT * FROM people WHERE id = $1 AND name = $2")

    result = source.execute(sql, [1, "Ada"], timeout_s=5)

    # MySQL has no boolean type (BOOLEAN is TINYINT(1)); a TIMESTAMP column is an instant read in UTC.
    assert result == QueryResult(
        columns=["id", "name", "score", "ratio", "active", "born", "seen_at", "seen_at_ts", "opens", "photo"],
        types=["integer", "string", "decimal", "float", "integer", "date", "timestamp", "timestamp", "time", "binary"],
        rows=[
            (
                1,
                "Ada",
                Decimal("12.50"),
                0.25,
                1,
                dt.date(1990, 5, 17),
                dt.datetime(2024, 3, 1, 10, 30),
                dt.datetime(2024, 3, 1, 9, 30),
                dt.timedelta(hours=9, minutes=15),
                b"\xca\xfe",
            )
        ],
    )


def test_the_scheme_names_the_dialect_and_its_writer():
    assert dialect_of("mysql://u:p@db/shop") == dialect_of("mariadb://u:p@db/shop") == "mysql"
    assert writer("mysql") is WRITER
    assert isinstance(get_data_source(f"{mysql_url()}?pool_max_size=2"), MySQLSource)
    close_data_sources()


def test_bound_values_with_quotes_and_sql_are_inert(source):
    sql = mysql_sql("SELECT id FROM people WHERE name = $1")

    hit = source.execute(sql, [HOSTILE], timeout_s=5)
    miss = source.execute(sql, ["x' OR '1'='1"], timeout_s=5)
    backslash = source.execute(sql, ["\\' OR 1=1 -- "], timeout_s=5)
    still_there = source.execute("SELECT count(*) AS n FROM people", [], timeout_s=5)

    assert (hit.rows, miss.rows, backslash.rows, still_there.rows) == ([(2,)], [], [], [(3,)])


def test_percent_signs_in_sql_are_not_placeholders(source):
    sql = mysql_sql("SELECT name FROM people WHERE name LIKE 'G%' AND 7 % 4 = $1 AND $2 LIKE '%\\%%'")

    result = source.execute(sql, [3, "50% off"], timeout_s=5)

    assert "LIKE 'G%%'" in sql
    assert "7 %% 4 = %(p1)s" in sql
    assert result.rows == [("Grace",)]


def test_a_parameter_used_twice_and_out_of_order_binds_by_number(source):
    sql = mysql_sql("SELECT $2 AS b, $1 AS a, $2 AS again")

    result = source.execute(sql, ["one", "two"], timeout_s=5)

    assert result.rows == [("two", "one", "two")]


# --- read only ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO people (id, name) VALUES (9, 'Mallory')",
        "UPDATE people SET name = 'Mallory'",
        "DELETE FROM people",
        "CREATE TABLE intruder (i INTEGER)",
        "DROP TABLE people",
        "SET SESSION TRANSACTION READ WRITE",
        "CALL mysql.anything()",
    ],
)
def test_writes_are_refused(source, statement):
    with pytest.raises(DataSourceError):
        source.execute(statement, [], timeout_s=5)

    assert source.execute("SELECT count(*), max(name) FROM people", [], timeout_s=5).rows == [(3, HOSTILE)]


def test_a_select_that_writes_is_refused_by_the_read_only_transaction(source):
    # A SELECT starts the statement, so the statement check lets it through; the transaction refuses the write.
    with pytest.raises(DataSourceError, match="READ ONLY"):
        source.execute("SELECT * FROM people FOR UPDATE", [], timeout_s=5)
    # DDL commits the read-only transaction before it runs; the session's default access mode still refuses it.
    with pytest.raises(DataSourceError):
        source.execute("WITH x AS (SELECT 1) SELECT * FROM x; CREATE TABLE intruder (i INTEGER)", [], timeout_s=5)

    with admin() as connection, connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'intruder'")
        assert cursor.fetchone() == (0,)


# --- time limits, cancel -----------------------------------------------------------------------------


def test_a_statement_past_its_time_limit_is_stopped_by_the_server(source):
    with pytest.raises(QueryTimeout):
        source.execute(SLOW, [], timeout_s=0.5)

    assert source.execute("SELECT 1", [], timeout_s=5).rows == [(1,)]


def test_cancel_kills_the_running_statement_and_the_source_goes_on(source):
    scope = CancelScope()
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(source.execute, SLOW + " WHERE 'cancel-me' <> ''", [], timeout_s=60, cancel=scope)
        wait_until(lambda: running("cancel-me"), "the statement never started", timeout=20)

        scope.cancel()

        with pytest.raises(QueryCancelled):
            future.result(timeout=20)
    wait_until(lambda: not running("cancel-me"), "the statement still runs after its cancel", timeout=20)
    assert source.execute("SELECT 2", [], timeout_s=5).rows == [(2,)]


def test_a_statement_under_a_cancelled_scope_is_not_run(source):
    scope = CancelScope()
    scope.cancel()

    with pytest.raises(QueryCancelled):
        source.execute("SELECT 1", [], timeout_s=5, cancel=scope)


def test_a_sleep_killed_by_cancel_is_cancelled_not_answered(source):
    # SLEEP() ends with 1 when its statement is killed, no error: the source still answers QueryCancelled.
    scope = CancelScope()
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(source.execute, "SELECT SLEEP(30) AS slept_for_cancel", [], timeout_s=60, cancel=scope)
        wait_until(lambda: running("slept_for_cancel"), "the statement never started", timeout=20)
        scope.cancel()
        with pytest.raises(QueryCancelled):
            future.result(timeout=20)


# --- outages, the pool, configuration ----------------------------------------------------------------


def test_a_server_that_is_down_is_unavailable_without_leaking_the_url():
    # Port 1 on loopback: nothing listens, the connection is refused at once.
    source = open_source("mysql://embedadmin:secret-password@127.0.0.1:1/shop?connect_timeout=2")

    with pytest.raises(DataSourceUnavailable) as caught:
        source.execute("SELECT 1", [], timeout_s=5)

    assert str(caught.value) == "Data source is unavailable"
    assert "secret-password" not in str(caught.value)


def test_a_wrong_password_is_a_configuration_fault_not_an_outage(people_url):
    parts = urlsplit(people_url)
    source = open_source(people_url.replace(f":{parts.password}@", ":wrong-password@"))

    with pytest.raises(DataSourceError) as caught:
        source.execute("SELECT 1", [], timeout_s=5)

    assert not isinstance(caught.value, DataSourceUnavailable)
    assert str(caught.value) == "Data source refused the connection: check the URL's user, password and database"


def test_a_pooled_connection_the_server_closed_is_not_handed_to_the_next_query(source):
    (thread_id,) = source.execute("SELECT CONNECTION_ID()", [], timeout_s=5).rows[0]
    with admin() as connection, connection.cursor() as cursor:
        cursor.execute(f"KILL CONNECTION {int(thread_id)}")

    # The idle connection was killed (as by a server restart): the source checks it, and opens another.
    (again,) = source.execute("SELECT CONNECTION_ID()", [], timeout_s=5).rows[0]

    assert again != thread_id


def test_the_pool_is_bounded_and_a_query_waits_only_so_long_for_a_connection(people_url):
    source = open_source(f"{people_url}?pool_max_size=1&pool_timeout=0.5")
    scope = CancelScope()
    try:
        with ThreadPoolExecutor(1) as pool:
            busy = pool.submit(source.execute, SLOW + " WHERE 'hold-the-pool' <> ''", [], timeout_s=60, cancel=scope)
            wait_until(lambda: running("hold-the-pool"), "the first statement never started", timeout=20)

            with pytest.raises(DataSourceUnavailable, match="no connection became free in time"):
                source.execute("SELECT 1", [], timeout_s=5)

            scope.cancel()
            with pytest.raises(QueryCancelled):
                busy.result(timeout=20)
        assert source.execute("SELECT 1", [], timeout_s=5).rows == [(1,)]
    finally:
        source.close()


def test_queries_from_many_threads_share_the_pool(source):
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda i: source.execute("SELECT %(p1)s AS i", [i], timeout_s=5).rows, range(32)))

    assert results == [[(i,)] for i in range(32)]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://u:p@db/shop?evil=1", "Unsupported MySQL URL option: evil"),
        ("mysql://u:p@db/", "A MySQL data source URL names a host and a database: mysql://user:password@host/db"),
        ("mariadb:///shop", "A MySQL data source URL names a host and a database: mysql://user:password@host/db"),
        ("mysql://u:p@db/shop?pool_max_size=many", "The port and pool_max_size must be integers"),
        ("mysql://u:p@db/shop?pool_max_size=0", "pool_max_size must be between 1 and 1000"),
        ("mysql://u:p@db/shop?connect_timeout=soon", "connect_timeout must be a number of seconds"),
        ("mysql://u:p@db/shop?ssl=maybe", "ssl must be true or false"),
    ],
)
def test_bad_urls_are_refused(url, message):
    with pytest.raises(DataSourceError) as caught:
        open_source(url)

    assert str(caught.value) == message


def test_tls_options_reach_the_driver():
    source = open_source("mysql://u:p@db:3310/shop?ssl=true&ssl_ca=/etc/ca.pem&ssl_verify_identity=false")

    options = source._connect_kwargs
    assert (options["host"], options["port"], options["database"]) == ("db", 3310, "shop")
    assert (options["ssl_ca"], options["ssl_verify_cert"], options["ssl_verify_identity"]) == (
        "/etc/ca.pem",
        True,
        False,
    )


# --- the writer: what MySQL says differently ---------------------------------------------------------

MOMENT = "2024-03-31 01:30:45.5"  # a Sunday; 03:30:45 in Berlin (the clocks went forward at 02:00 UTC+1)
TRUNCATED = {
    "second": dt.datetime(2024, 3, 31, 1, 30, 45),
    "minute": dt.datetime(2024, 3, 31, 1, 30),
    "hour": dt.datetime(2024, 3, 31, 1, 0),
    "day": dt.datetime(2024, 3, 31),
    "week": dt.datetime(2024, 3, 25),  # weeks start on Monday, as in Cube
    "month": dt.datetime(2024, 3, 1),
    "quarter": dt.datetime(2024, 1, 1),
    "year": dt.datetime(2024, 1, 1),
}


@pytest.mark.parametrize("unit", list(TRUNCATED))
def test_every_granularity_truncates_on_the_server(source, unit):
    tree = exp.select(
        exp.TimestampTrunc(
            this=exp.Cast(this=exp.Literal.string(MOMENT), to=exp.DataType.build("timestamp")), unit=exp.var(unit)
        ).as_("t")
    )

    (value,) = source.execute(tree.sql(dialect=WRITER), [], timeout_s=5).rows[0]

    assert value == TRUNCATED[unit]


def test_local_time_converts_with_the_servers_time_zone_tables(source):
    sql = mysql_sql(
        f"SELECT CAST('{MOMENT}' AS TIMESTAMPTZ) AT TIME ZONE 'Europe/Berlin' AS berlin, "
        f"CAST('{MOMENT}' AS TIMESTAMPTZ) AT TIME ZONE 'UTC' AS utc, "
        f"CAST('{MOMENT}' AS TIMESTAMPTZ) AT TIME ZONE 'America/New_York' AS new_york"
    )

    row = source.execute(sql, [], timeout_s=5).rows[0]

    assert row == (
        dt.datetime(2024, 3, 31, 3, 30, 45, 500000),
        dt.datetime(2024, 3, 31, 1, 30, 45, 500000),
        dt.datetime(2024, 3, 30, 21, 30, 45, 500000),
    )
    assert "CONVERT_TZ" not in mysql_sql("SELECT CAST(x AS TIMESTAMPTZ) AT TIME ZONE 'UTC' FROM t")


def test_a_time_zone_the_server_does_not_know_is_refused_not_answered_with_nulls(source):
    sql = mysql_sql(f"SELECT CAST('{MOMENT}' AS TIMESTAMPTZ) AT TIME ZONE 'Mars/Olympus_Mons' AS local")

    with pytest.raises(DataSourceError, match="does not know the time zone 'Mars/Olympus_Mons'"):
        source.execute(sql, [], timeout_s=5)


def test_instants_bound_as_text_with_a_z_compare_as_times(source):
    sql = mysql_sql(
        "SELECT count(*) FROM people WHERE seen_at >= CAST($1 AS TIMESTAMPTZ) AND seen_at < CAST($2 AS TIMESTAMPTZ)"
    )

    rows = source.execute(sql, ["2024-03-01T10:30:00.000Z", "2024-03-01T23:59:59.999Z"], timeout_s=5).rows

    assert rows == [(1,)]


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        ("ORDER BY 1", [0.25, 1.5, None]),
        ("ORDER BY 1 DESC", [None, 1.5, 0.25]),
        ("ORDER BY ratio NULLS FIRST", [None, 0.25, 1.5]),
        ("ORDER BY ratio DESC NULLS LAST", [1.5, 0.25, None]),
    ],
)
def test_nulls_sort_as_in_postgresql(source, order, expected):
    sql = mysql_sql(f"SELECT ratio FROM people {order}")

    assert [row[0] for row in source.execute(sql, [], timeout_s=5).rows] == expected


def test_a_values_list_with_column_names_is_a_union(source):
    sql = mysql_sql("SELECT s.b, s.a FROM (VALUES (1, 'x'), (2, 'y')) AS s(a, b) ORDER BY s.a")

    assert source.execute(sql, [], timeout_s=5).rows == [("x", 1), ("y", 2)]


def test_interval_steps_and_epochs(source):
    sql = mysql_sql(
        "SELECT CAST('2024-01-31' AS TIMESTAMP) + INTERVAL '1' MONTH * 2 AS stepped, "
        "EXTRACT(EPOCH FROM CAST('1969-12-31 23:59:59.5' AS TIMESTAMP)) AS before_1970"
    )

    assert source.execute(sql, [], timeout_s=5).rows == [(dt.datetime(2024, 3, 31), Decimal("-0.5"))]


# What MySQL cannot say is refused when the query is written, never dropped from it. No query shape of the
# Core Data API tests is refused (they all run on MariaDB, with PostgreSQL's answers); these are the constructs
# the writer refuses, in trees the compiler may build.
REFUSED = {
    "IGNORE NULLS in a window": exp.select(
        exp.Window(this=exp.IgnoreNulls(this=exp.FirstValue(this=exp.column("ratio"))), partition_by=[exp.column("id")])
    ).from_("people"),
    "truncation to a millennium": exp.select(
        exp.TimestampTrunc(this=exp.column("seen_at"), unit=exp.var("MILLENNIUM"))
    ).from_("people"),
}


@pytest.mark.parametrize("tree", list(REFUSED.values()), ids=list(REFUSED))
def test_what_mysql_cannot_say_is_a_query_error(tree):
    with pytest.raises(QueryError, match=r"^This query cannot run on MySQL: "):
        tree.sql(dialect=WRITER)


# --- over HTTP ---------------------------------------------------------------------------------------

HTTP_QUERIES = {
    "revenue by month in Berlin": {
        "measures": ["orders.count", "orders.revenue"],
        "timeDimensions": [
            {"dimension": "orders.created_at", "granularity": "month", "dateRange": ["2024-01-01", "2024-12-31"]}
        ],
        "timezone": "Europe/Berlin",
    },
    "countries, NULL included, descending": {
        "measures": ["users.count"],
        "dimensions": ["users.country"],
        "order": {"users.country": "desc"},
    },
    "a filter value with a percent sign": {
        "dimensions": ["products.name"],
        "filters": [{"member": "products.name", "operator": "contains", "values": ["50%"]}],
    },
    "ungrouped page": {
        "dimensions": ["orders.amount", "orders.status"],
        "order": {"orders.amount": "asc"},
        "limit": 3,
        "offset": 2,
        "ungrouped": True,
    },
}


@pytest.mark.parametrize("query", list(HTTP_QUERIES.values()), ids=list(HTTP_QUERIES))
def test_a_mysql_deployment_answers_load_as_postgresql_does(
    core: CoreApi, maria: MySQLExecutor, pg: PostgresExecutor, query
):
    deployment_configure(deployment=core.cast.deployment, model_dir=str(SHOP), data_source_url=maria.url)

    body = core.load(query)

    assert body["data"] == run_query(pg, query)["data"]
    assert body["data"], "the query must select some rows"


def test_a_mysql_deployment_answers_the_documented_rows(core: CoreApi, maria: MySQLExecutor):
    deployment_configure(deployment=core.cast.deployment, model_dir=str(SHOP), data_source_url=maria.url)

    body = core.load(HTTP_QUERIES["revenue by month in Berlin"])

    # Order 2 (Jan 31 23:30 UTC) is February in Berlin; order 8 (Dec 31 23:59 UTC) is 2025 there.
    months = {row["orders.created_at.month"][:7]: row["orders.count"] for row in body["data"]}
    assert months == {"2024-01": "1", "2024-02": "2", "2024-03": "2", "2024-06": "2", "2024-10": "2"}
    assert body["dbType"] == "mysql"
