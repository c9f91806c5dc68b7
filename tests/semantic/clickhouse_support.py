"""The shop dataset in ClickHouse: chDB, the ClickHouse engine embedded in this process, holds it in a data directory
of the test session, and the executor queries it through the ``chdb:`` data source itself (the clickhouse-connect
client, its settings, the server-side parameters ``{pN:Type}`` and the writer's SQL).

chDB opens one data directory per process, so every ClickHouse test of a pytest process shares :func:`chdb_directory`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from .dataset import ROWS, SCHEMA

# Tests run on every executor whose hand-written expected SQL ClickHouse cannot run (their ClickHouse runs are
# expected to fail with that error, strictly): the same queries' ClickHouse answers are compared with PostgreSQL's
# in tests/semantic/sql/test_clickhouse_queries.py.
_GENERATE_SERIES = "the expected SQL uses PostgreSQL's generate_series, which ClickHouse does not have"
_CORRELATED = "the expected SQL uses correlated subqueries, which ClickHouse does not run"
HAND_WRITTEN_SQL_CLICKHOUSE_CANNOT_RUN = {
    "test_semantic_sql_returns_what_the_hand_written_sql_returns[clickhouse-escaped % in a pattern]": (
        "the expected SQL's ESCAPE '\\' is an unterminated string in ClickHouse, where a backslash escapes the quote"
    ),
    "test_generated_sql_matches_hand_written_sql[clickhouse-fan-out: order measures through line items, grouped by "
    "user country]": _CORRELATED,
    "test_generated_sql_matches_hand_written_sql[clickhouse-dimension built on a sub_query dimension, with fan-out "
    "measures and a sub_query filter]": _CORRELATED,
    "test_rolling_windows_match_hand_written_sql[clickhouse-trailing 7 days, unbounded running count and a plain "
    "measure, by month]": _GENERATE_SERIES,
    "test_rolling_windows_match_hand_written_sql[clickhouse-window around the bucket start: the month before and the "
    "month itself]": _GENERATE_SERIES,
    # Refused on ClickHouse before the expected SQL runs (test_clickhouse_queries.py asserts the refusal).
    "test_rolling_windows_match_hand_written_sql[clickhouse-year to date by quarter and status]": (
        "ClickHouse refuses a rolling window grouped by a dimension (a join on a range of times)"
    ),
}

# The dataset's column types in ClickHouse: nullable but for the primary keys, timestamps in microseconds, UTC.
_TYPES = {"INTEGER": "Int32", "VARCHAR": "String", "TIMESTAMP": "DateTime64(6, 'UTC')"}


def clickhouse_columns(columns: str) -> tuple[str, str]:
    """A dataset table's columns (``id INTEGER PRIMARY KEY, name VARCHAR...``) as ClickHouse columns, and its key."""
    out = []
    key = ""
    for column in columns.split(","):
        name, kind, *rest = column.split()
        if rest:  # PRIMARY KEY
            key = name
            out.append(f"{name} {_TYPES[kind]}")
        else:
            out.append(f"{name} Nullable({_TYPES[kind]})")
    return ", ".join(out), key


class ClickHouseExecutor:
    """The shop dataset queried through a ``chdb:`` data source (read-only, UTC, server-side parameters)."""

    dialect = "clickhouse"

    def __init__(self, url: str) -> None:
        from embedadmin.semantic.sources.clickhouse import open_source

        self.url = url
        self.source = open_source(url)

    def run(self, sql: str, params: Sequence[Any] = ()) -> tuple[list[str], list[tuple[Any, ...]]]:
        result = self.source.execute(sql, list(params), timeout_s=30)
        return result.columns, result.rows


def load_shop(directory: Path) -> None:
    """Create the shop tables in chDB's default database of ``directory`` and fill them (idempotent)."""
    import clickhouse_connect

    client = clickhouse_connect.get_client(interface="chdb", path=str(directory))
    try:
        for table, columns in SCHEMA.items():
            definition, key = clickhouse_columns(columns)
            client.command(f"DROP TABLE IF EXISTS {table}")
            client.command(f"CREATE TABLE {table} ({definition}) ENGINE = MergeTree ORDER BY {key}")
            names = [column.split()[0] for column in columns.split(",")]
            client.insert(table, [list(row) for row in ROWS[table]], column_names=names)
    finally:
        client.close()


@pytest.fixture(scope="session")
def chdb_directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The chDB data directory of this pytest process, holding the shop dataset."""
    directory = tmp_path_factory.mktemp("chdb")
    load_shop(directory)
    return directory


@pytest.fixture(scope="session")
def click(chdb_directory: Path) -> Iterator[ClickHouseExecutor]:
    executor = ClickHouseExecutor(f"chdb:///{chdb_directory}")
    yield executor
    executor.source.close()
