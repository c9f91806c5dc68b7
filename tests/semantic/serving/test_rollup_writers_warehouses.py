"""The warehouses' rollup writers (Trino, Snowflake, BigQuery, Databricks) against their official drivers.

No warehouse runs here: as in ``tests/semantic/sources/test_warehouse_drivers.py``, only the driver's ``connect`` (or
BigQuery's ``Client``) is replaced, by a recorder whose cursor answers as the warehouse would. The statements each
writer sends are checked exactly (a snapshot of the build, the garbage collection's comment and drop) and parsed back
by sqlglot in the warehouse's dialect.
"""

from __future__ import annotations

import time
from typing import Any

import databricks.sql as databricks_sql
import google.cloud.bigquery as google_bigquery
import pytest
import snowflake.connector as snowflake_connector
import sqlglot
import trino as trino_driver

from embedadmin.semantic.errors import DataSourceError, QueryTimeout
from embedadmin.semantic.serving.rollup_source import UNREFERENCED
from embedadmin.semantic.serving.rollup_store import BuildStopped
from embedadmin.semantic.serving.rollup_writers import source_tables
from tests.semantic.sources.test_warehouse_drivers import FakeClient, Service, recorder

COLUMNS = ["orders__status", "orders__count"]
URLS = {
    "trino": "trino://etl@trino.example/hive/shop",
    "snowflake": "snowflake://analyst:pw@myorg-acct/SHOP/PUBLIC?warehouse=BI",
    "bigquery": "bigquery://my-proj/shop?location=EU",
    "databricks": "databricks://token:t@host/main/shop?http_path=/sql/1.0/warehouses/a",
}


class Answers(Service):
    """A service that answers each statement by its start (``answers``: prefix -> (columns, rows))."""

    def __init__(self, answers: dict[str, tuple[list[Any], list[tuple[Any, ...]]]], fail_on: str = "") -> None:
        super().__init__()
        self.answers = answers
        self.fail_on = fail_on
        self.failure: Exception | None = None

    def run(self, sql: str, params: Any) -> None:
        self.statements.append((sql, params))
        if self.fail_on and sql.startswith(self.fail_on):
            assert self.failure is not None
            raise self.failure
        self.answer = next((a for prefix, a in self.answers.items() if sql.startswith(prefix)), ([], []))


def install(monkeypatch, dialect: str, service: Service) -> None:
    """The warehouse's driver ``connect`` replaced by ``service``'s recorder."""
    if dialect == "trino":
        monkeypatch.setattr(trino_driver.dbapi, "connect", recorder(service))
    elif dialect == "snowflake":
        monkeypatch.setattr(snowflake_connector, "connect", recorder(service))
    elif dialect == "databricks":
        monkeypatch.setattr(databricks_sql, "connect", recorder(service))
    else:

        class Client(FakeClient):
            def query(self, sql: str, job_config: Any, timeout: float) -> Any:
                job = super().query(sql, job_config, timeout)
                self.service.jobs.append(job_config)  # type: ignore[attr-defined]
                return job

        service.jobs = []  # type: ignore[attr-defined]
        monkeypatch.setattr(Client, "service", service, raising=False)
        monkeypatch.setattr(google_bigquery, "Client", Client)


BUILD = {
    "trino": 'SELECT "orders".status AS "orders__status", COUNT(*) AS "orders__count" FROM orders AS "orders" '
    'WHERE "orders".created_at >= FROM_ISO8601_TIMESTAMP(?) GROUP BY 1',
    "snowflake": 'SELECT "orders".status AS "orders__status", COUNT(*) AS "orders__count" FROM orders AS "orders" '
    'WHERE "orders".created_at >= :1 GROUP BY 1',
    "bigquery": "SELECT `orders`.status AS `orders__status`, COUNT(*) AS `orders__count` FROM orders AS `orders` "
    "WHERE `orders`.created_at >= @p1 GROUP BY 1",
    "databricks": "SELECT `orders`.status AS `orders__status`, COUNT(*) AS `orders__count` FROM orders AS `orders` "
    "WHERE `orders`.created_at >= :p1 GROUP BY 1",
}
# What each warehouse answers about the written table.
MEASURES = {
    "trino": {
        "CREATE TABLE": ([("rows", "bigint")], [(3,)]),
        "SHOW STATS": (
            [("column_name", "varchar"), ("data_size", "double")],
            [("orders__status", 120.0), ("orders__count", None), (None, None)],
        ),
    },
    "snowflake": {"SELECT row_count": ([("ROW_COUNT", 0), ("BYTES", 0)], [(3, 1536)])},
    "bigquery": {"SELECT row_count": ([("row_count", "INTEGER"), ("size_bytes", "INTEGER")], [(3, 1536)])},
    "databricks": {
        "CREATE TABLE": ([("num_affected_rows", "bigint"), ("num_inserted_rows", "bigint")], [(3, 3)]),
        "DESCRIBE DETAIL": ([("format", "string"), ("sizeInBytes", "bigint")], [("delta", 1536)]),
    },
}
# The statements of one build, in order, with their parameters as the driver received them.
SNAPSHOTS = {
    "trino": [
        ('CREATE SCHEMA IF NOT EXISTS "rollups"', None),
        (
            'CREATE TABLE "rollups"."r1_t" AS SELECT "b"."orders__status", "b"."orders__count" FROM '
            f'({BUILD["trino"]}) AS "b"',
            ["2024-01-01T00:00:00.000Z"],
        ),
        ('SHOW STATS FOR "rollups"."r1_t"', None),
    ],
    "snowflake": [
        ("ALTER SESSION SET STATEMENT_TIMEOUT_IN_SECONDS = 30", None),
        ('CREATE SCHEMA IF NOT EXISTS "rollups"', None),
        (
            'CREATE TABLE "rollups"."r1_t" AS SELECT "b"."orders__status", "b"."orders__count" FROM '
            f'({BUILD["snowflake"]}) AS "b"',
            ["2024-01-01T00:00:00.000Z"],
        ),
        (
            "SELECT row_count, bytes FROM information_schema.tables WHERE table_schema = :1 AND table_name = :2",
            ["rollups", "r1_t"],
        ),
    ],
    "bigquery": [
        ("CREATE SCHEMA IF NOT EXISTS `rollups` OPTIONS (location = 'EU')", []),
        (
            "CREATE TABLE `rollups`.`r1_t` AS SELECT `b`.`orders__status`, `b`.`orders__count` FROM "
            f"({BUILD['bigquery']}) AS `b`",
            [("p1", "2024-01-01T00:00:00.000Z")],
        ),
        ("SELECT row_count, size_bytes FROM `rollups`.__TABLES__ WHERE table_id = @p1", [("p1", "r1_t")]),
    ],
    "databricks": [
        ("SET STATEMENT_TIMEOUT = 30", None),
        ("CREATE SCHEMA IF NOT EXISTS `rollups`", None),
        (
            "CREATE TABLE `rollups`.`r1_t` AS SELECT `b`.`orders__status`, `b`.`orders__count` FROM "
            f"({BUILD['databricks']}) AS `b`",
            {"p1": "2024-01-01T00:00:00.000Z"},
        ),
        ("DESCRIBE DETAIL `rollups`.`r1_t`", None),
    ],
}
DIALECTS = sorted(SNAPSHOTS)


def parses(dialect: str, sql: str) -> None:
    """``sql`` reads back as one statement of ``dialect`` (sqlglot; statements it keeps as commands are not read)."""
    if sql.startswith(("SHOW STATS", "DESCRIBE DETAIL", "ALTER SESSION", "SET STATEMENT_TIMEOUT")):
        return
    assert len(sqlglot.parse(sql, read=dialect)) == 1, sql


def qualified(dialect: str, table: str) -> str:
    quote = "`" if dialect in ("bigquery", "databricks") else '"'
    return f"{quote}rollups{quote}.{quote}{table}{quote}"


def write(dialect: str, keep_going: Any = lambda: True, indexes: Any = ()) -> Any:
    return source_tables(URLS[dialect]).write(
        schema="rollups",
        table="r1_t",
        sql=BUILD[dialect],
        params=["2024-01-01T00:00:00.000Z"],
        columns=COLUMNS,
        indexes=list(indexes),
        timeout_s=30,
        keep_going=keep_going,
    )


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_build_sends_its_statements_and_reports_rows_and_bytes(monkeypatch, dialect: str) -> None:
    # given
    service = Answers(MEASURES[dialect])
    install(monkeypatch, dialect, service)

    # when: a build with an index asked for (no warehouse has indexes: it is ignored)
    written = write(dialect, indexes=[["orders__status"]])

    # then: exactly these statements, each parsed back in the dialect; the table's rows and size
    assert service.statements == SNAPSHOTS[dialect]
    for sql, _ in service.statements:
        parses(dialect, sql)
    assert (written.file, written.rows) == ("r1_t", 3)
    assert written.bytes == (120 if dialect == "trino" else 1536)
    if dialect == "bigquery":
        config = service.jobs[1]  # type: ignore[attr-defined]
        assert int(config.job_timeout_ms) == 30000  # the build's time limit is the job's
    if dialect == "trino":
        assert service.connects[0]["session_properties"] == {"query_max_run_time": "30s"}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_stopped_build_drops_its_table(monkeypatch, dialect: str) -> None:
    service = Answers(MEASURES[dialect])
    install(monkeypatch, dialect, service)
    answers = iter([True, False])  # the lease is lost once the table is written

    with pytest.raises(BuildStopped):
        write(dialect, keep_going=lambda: next(answers))

    drop = f"DROP TABLE IF EXISTS {qualified(dialect, 'r1_t')}"
    assert service.statements[-1][0] == drop
    parses(dialect, drop)


FAILURES = {
    "trino": lambda: trino_driver.exceptions.TrinoQueryError(
        {"errorName": "EXCEEDED_TIME_LIMIT", "errorType": "INSUFFICIENT_RESOURCES", "message": "Query exceeded"}
    ),
    "snowflake": lambda: snowflake_connector.errors.ProgrammingError(msg="Statement reached its timeout", errno=630),
    "bigquery": lambda: __import__("google.api_core.exceptions", fromlist=["BadRequest"]).BadRequest(
        "timeout", errors=[{"reason": "timeout", "message": "Job timed out"}]
    ),
    "databricks": lambda: databricks_sql.exc.ServerOperationError("[STATEMENT_TIMEOUT] Statement timed out"),
}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_build_past_its_time_limit_is_a_timeout_and_drops_what_it_wrote(monkeypatch, dialect: str) -> None:
    service = Answers(MEASURES[dialect], fail_on="CREATE TABLE")
    service.failure = FAILURES[dialect]()
    install(monkeypatch, dialect, service)

    with pytest.raises(QueryTimeout):
        write(dialect)

    assert service.statements[-1][0].startswith("DROP TABLE IF EXISTS ")


LISTINGS = {
    "trino": (
        "SELECT table_name, comment FROM system.metadata.table_comments WHERE catalog_name = ? AND schema_name = ?",
        ["hive", "rollups"],
    ),
    "snowflake": ("SELECT table_name, comment FROM information_schema.tables WHERE table_schema = :1", ["rollups"]),
    "bigquery": (
        "SELECT t.table_name, o.option_value FROM `rollups`.INFORMATION_SCHEMA.TABLES AS t LEFT JOIN "
        "`rollups`.INFORMATION_SCHEMA.TABLE_OPTIONS AS o ON o.table_name = t.table_name AND o.option_name = "
        "'description'",
        [],
    ),
    "databricks": (
        "SELECT table_name, comment FROM information_schema.tables WHERE table_schema = :p1",
        {"p1": "rollups"},
    ),
}
MARKS = {
    "trino": 'COMMENT ON TABLE "rollups"."r1_new" IS \'{note}\'',
    "snowflake": 'COMMENT ON TABLE "rollups"."r1_new" IS \'{note}\'',
    "bigquery": "ALTER TABLE `rollups`.`r1_new` SET OPTIONS (description = '{note}')",
    "databricks": "COMMENT ON TABLE `rollups`.`r1_new` IS '{note}'",
}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_garbage_collection_marks_then_drops_unreferenced_tables(monkeypatch, dialect: str) -> None:
    # given: the schema holds the table in use (marked long ago, while a build wrote it), one found unreferenced long
    # ago, one not yet marked, another's table
    long_ago = f"{UNREFERENCED}{int(time.time()) - 3600}"
    described = f'"{long_ago}"' if dialect == "bigquery" else long_ago  # BigQuery's option value is a literal
    listed = [("r1_current", described), ("r1_old", described), ("r1_new", None), ("r2_other", None)]
    columns: list[Any] = [("table_name", "STRING"), ("option_value", "STRING")]
    if dialect != "bigquery":
        columns = [("table_name", "string"), ("comment", "string")]
    service = Answers({LISTINGS[dialect][0][:40]: (columns, listed)})
    install(monkeypatch, dialect, service)

    # when
    dropped = source_tables(URLS[dialect]).unreferenced("rollups", "r1_", lambda: {"r1_current"}, older_than_s=600)

    # then: the mark of the one in use cleared, the old one dropped, the new one marked with the time it was found;
    # nothing else touched
    assert dropped == 1
    sent = [(sql, params) for sql, params in service.statements if not sql.startswith(("ALTER SESSION", "SET "))]
    (listing, params), (cleared, _), (drop, _), (mark, _) = sent
    assert (listing, params or []) == (LISTINGS[dialect][0], LISTINGS[dialect][1] or [])
    assert cleared == MARKS[dialect].replace("r1_new", "r1_current").format(note="")
    assert drop == f"DROP TABLE IF EXISTS {qualified(dialect, 'r1_old')}"
    note = mark.split("'")[1]
    assert note.startswith(UNREFERENCED)
    assert abs(int(note.removeprefix(UNREFERENCED)) - time.time()) < 600
    assert mark == MARKS[dialect].format(note=note)
    for sql in (listing, cleared, drop, mark):
        parses(dialect, sql)


def test_trino_rollups_need_a_catalog_in_the_url() -> None:
    with pytest.raises(DataSourceError, match="names no catalog"):
        source_tables("trino://etl@trino.example")
