"""ClickHouse answers the Core Data API's queries as PostgreSQL does.

Every test taking the ``executor`` fixture runs on ClickHouse too (tests/semantic/conftest.py: the shop dataset in
chDB, queried through the ``chdb:`` data source). Where such a test's hand-written expected SQL cannot run on
ClickHouse (``HAND_WRITTEN_SQL_CLICKHOUSE_CANNOT_RUN``), this module compares the same queries' ClickHouse answers
with PostgreSQL's. It also runs the cross-database suite's queries over HTTP (``/cubejs-api/v1/load``) on a
deployment whose data source is ClickHouse, against the hand-written SQL on PostgreSQL, and asserts the shapes
ClickHouse refuses.
"""

# ruff: noqa: F811  (the fixtures imported from http_support and test_cross_database are redefined as arguments)

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import psycopg
import pytest

from demo.generate import TABLES
from embedadmin.accounts.services import deployment_configure
from embedadmin.semantic.errors import QueryError
from tests.schemas import qualified_model
from tests.semantic.clickhouse_support import ClickHouseExecutor
from tests.semantic.conftest import run_query
from tests.semantic.cubesql.test_cubesql import EQUIVALENT
from tests.semantic.cubesql_support import data, numeric
from tests.semantic.databases import PostgresExecutor
from tests.semantic.http_support import DEMO_MODEL, core, demo_duckdb, fresh_semantic_state  # noqa: F401
from tests.semantic.results.test_query_results import ADMIN, CASES, ROLLING, canonical
from tests.semantic.sql.test_cross_database import CASES as HTTP_CASES
from tests.semantic.sql.test_cross_database import _api_value, _value, postgres_demo  # noqa: F401

pytestmark = [pytest.mark.postgres]

REFUSED = {
    # A rolling window measure grouped by a dimension: PostgreSQL joins each bucket to its rows on a range of times;
    # ClickHouse joins only on equalities, and without the condition the groups of rows outside a bucket would appear.
    "year to date by quarter and status": "ClickHouse cannot answer this query: it joins rows on a range of times",
}
RESULT_CASES = [case for case in [*CASES, *ROLLING] if case[0] not in REFUSED]


def _rows(body: dict[str, Any], keys: list[str]) -> list[tuple[Any, ...]]:
    return [tuple(canonical(row[key]) for key in keys) for row in body["data"]]


@pytest.mark.parametrize(("name", "query", "keys"), [c[:3] for c in RESULT_CASES], ids=[c[0] for c in RESULT_CASES])
def test_clickhouse_answers_as_postgresql(
    click: ClickHouseExecutor, pg: PostgresExecutor, name: str, query: dict[str, Any], keys: list[str]
) -> None:
    expected = _rows(run_query(pg, query, ADMIN), keys)

    got = _rows(run_query(click, query, ADMIN), keys)

    assert expected, "the case must select some rows"
    assert got == expected, name


@pytest.mark.parametrize(("semantic", "_"), EQUIVALENT.values(), ids=EQUIVALENT.keys())
def test_semantic_sql_on_clickhouse_answers_as_on_postgresql(
    click: ClickHouseExecutor, pg: PostgresExecutor, semantic: str, _: str
) -> None:
    assert numeric(data(click, semantic)) == numeric(data(pg, semantic))


@pytest.mark.parametrize("name", list(REFUSED))
def test_shapes_clickhouse_cannot_answer_are_refused_with_a_reason(click: ClickHouseExecutor, name: str) -> None:
    (query,) = [case[1] for case in ROLLING if case[0] == name]

    with pytest.raises(QueryError) as refusal:
        run_query(click, query, ADMIN)

    assert str(refusal.value).startswith(REFUSED[name])


def test_values_that_need_escaping_are_bound_by_the_server(click: ClickHouseExecutor, pg: PostgresExecutor) -> None:
    # Quotes, backslashes, tabs, a placeholder-looking text and SQL: each compared as a value, on both databases.
    values = ["O'Brien", "back\\slash", "tab\there", "{p1:String}", "'; DROP TABLE orders; --", "Lamp 50% off"]
    query = {
        "measures": ["products.count"],
        "dimensions": ["products.name"],
        "filters": [{"member": "products.name", "operator": "equals", "values": values}],
    }

    got = run_query(click, query)["data"]

    assert got == run_query(pg, query)["data"] == [{"products.name": "Lamp 50% off", "products.count": "1"}]


# --- Over HTTP: the cross-database suite's queries on a ClickHouse deployment.


@pytest.fixture(scope="module")
def clickhouse_demo(chdb_directory: Path, demo_duckdb: Path) -> str:
    """The demo dataset copied value for value into the database ``demo`` of the session's chDB directory."""
    import clickhouse_connect

    kinds = {"BIGINT": "Int64", "INTEGER": "Int32", "VARCHAR": "String", "TIMESTAMP": "DateTime64(6, 'UTC')"}
    client = clickhouse_connect.get_client(interface="chdb", path=str(chdb_directory))
    try:
        client.command("CREATE DATABASE IF NOT EXISTS demo")
        with duckdb.connect(str(demo_duckdb), read_only=True) as source:
            for table, columns in TABLES.items():
                spec = ", ".join(
                    f"{name} {'Int64' if name == 'id' else f'Nullable({kinds.get(kind, kind)})'}"
                    for name, kind in columns
                )
                client.command(f"DROP TABLE IF EXISTS demo.{table}")
                client.command(f"CREATE TABLE demo.{table} ({spec}) ENGINE = MergeTree ORDER BY id")
                rows = source.execute(f"SELECT * FROM {table}").fetchall()
                client.insert(f"demo.{table}", rows, column_names=[name for name, _ in columns])
    finally:
        client.close()
    return f"chdb:///{chdb_directory}"


@pytest.mark.parametrize("case", list(HTTP_CASES.values()), ids=list(HTTP_CASES))
def test_load_over_http_on_clickhouse_answers_as_hand_written_sql_on_postgresql(
    core, clickhouse_demo: str, postgres_demo: tuple[str, str], tmp_path: Path, case: Any
) -> None:
    # given a deployment whose data source is ClickHouse
    model = qualified_model(DEMO_MODEL, tmp_path / "model", "demo")
    deployment_configure(deployment=core.cast.deployment, model_dir=str(model), data_source_url=clickhouse_demo)
    token = core.token(**case.claims) if case.claims else core.token()
    url, schema = postgres_demo

    # when
    response = core.post("load", {"query": case.query}, token=token)

    # then
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["annotation"]
    assert body["data"] is not None
    with psycopg.connect(url, options="-c TimeZone=UTC") as postgres:
        expected = [tuple(_value(v) for v in row) for row in postgres.execute(case.sql.format(t=f'"{schema}".'))]
    keys = [*case.query.get("dimensions", [])]
    keys += [f"{td['dimension']}.{td['granularity']}" for td in case.query.get("timeDimensions", [])]
    keys += case.query.get("measures", [])
    assert expected
    assert [tuple(_api_value(row[key]) for key in keys) for row in body["data"]] == expected
