"""Rollups in the DuckDB store (a deployment's default home) built from every source this server queries: live on
MariaDB and ClickHouse (chDB), each answer equal to the source's own (every oracle query shape with
``usedPreAggregations``, ``/v1/sql``'s statement on the store, partitions within a build range, a lambda's rollup rows
with the source's rows added after its build, under a viewer's row policy, ``originalSql`` tables, a ``refresh_key``
SQL in the source's dialect); a build statement stopped on the source when its lease is lost; a lambda's source part
capped at ``MAX_SOURCE_ROW_LIMIT``. The warehouses (Trino, Snowflake, BigQuery, Databricks) with their drivers'
``connect`` recorded: the build statement sent in the warehouse's dialect, its rows written to the store and read
there.
"""

# ruff: noqa: F811  (fixtures imported from other test modules are redefined as test arguments, as pytest wants)

from __future__ import annotations

import textwrap
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest
import snowflake.connector as snowflake_connector
import sqlglot

from embedadmin.accounts.services import deployment_configure
from embedadmin.semantic.models import PreAggregationPartition
from embedadmin.semantic.serving.pre_aggregations import pre_aggregation_partition_build, pre_aggregations_refresh
from embedadmin.semantic.serving.rollup_store import TABLE
from embedadmin.semantic.tasks import serve
from tests.schemas import qualified_model
from tests.semantic.clickhouse_support import chdb_directory  # noqa: F401
from tests.semantic.http_support import (  # noqa: F401
    DEMO_MODEL,
    CoreApi,
    core,
    demo_duckdb,
    fresh_semantic_state,
)
from tests.semantic.rollup_homes import Home, mysql_demo, new_home  # noqa: F401
from tests.semantic.rollup_support import build_rollups, model_with_rollups
from tests.semantic.serving.test_pre_aggregations import (
    ANSWERED_BY,
    keys_of,
    load,
    same_rows,
    store,  # noqa: F401
    used,
)
from tests.semantic.serving.test_rollup_lambda import ADDED, LAMBDA, ORIGINAL, QUERIES
from tests.semantic.serving.test_rollup_writers_warehouses import URLS, Answers, install
from tests.semantic.serving.test_rollups_in_source import pg_rows
from tests.semantic.sources.test_warehouse_drivers import SnowflakeCursor, recorder
from tests.semantic.sql.test_clickhouse_queries import clickhouse_demo  # noqa: F401
from tests.semantic.sql.test_cross_database import CASES, _api_value, _value, postgres_demo  # noqa: F401
from tests.waiting import wait_until

# The live tests compare with the PostgreSQL copy of the demo data; the warehouses' run on any database.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=["mariadb", "clickhouse"])
def source(request, postgres_demo) -> Any:
    """MariaDB or ClickHouse (chDB) with the demo dataset; rows a test adds are removed afterwards."""
    found = new_home(request.param, request)
    yield found
    found.remove_added_orders()


def on_store(core: CoreApi, tmp_path: Path, home: Home, rollups: dict[str, str] | None = None) -> None:
    """The deployment on ``home``'s demo data with ``rollups``, kept in the DuckDB store (no schema set)."""
    plain = qualified_model(DEMO_MODEL, tmp_path / "plain", home.data_schema)
    model = model_with_rollups(tmp_path / "model", source=plain, rollups=rollups)
    deployment_configure(deployment=core.cast.deployment, model_dir=str(model), data_source_url=home.url)
    core.cast.deployment.refresh_from_db()


def both(core: CoreApi, settings, query: dict[str, Any], token: str | None = None) -> tuple[dict, dict]:
    """The answer with rollups, then the data source's alone."""
    token = token or core.token()
    from_rollups = load(core, query, token)
    settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "ENABLED": False}
    from_source = load(core, query, token)
    settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "ENABLED": True}
    assert used(from_source) is None
    return from_rollups, from_source


def add_orders(home: Home, orders: list[tuple[int, str, str, str]]) -> None:
    """Orders of the first user added to ``home``'s data (ids from 1000000: removed by ``remove_added_orders``)."""
    users = home.ddl.table(home.data_schema, "users")
    for pk, status, amount, at in orders:
        moment = f"toDateTime64('{at}', 6, 'UTC')" if home.kind == "clickhouse" else f"'{at}'"
        home.run(
            f"INSERT INTO {home.orders()} (id, user_id, status, amount, item_count, created_at) "
            f"SELECT {int(pk)}, min(id), '{status}', CAST('{amount}' AS DECIMAL(12, 2)), 1, {moment} FROM {users}"
        )


@pytest.mark.postgres
def test_every_oracle_query_shape_answers_from_the_store_as_the_source_does(
    core, store, settings, tmp_path, postgres_demo, source
):
    # given: the demo model with rollups on MariaDB or ClickHouse, built into the store
    on_store(core, tmp_path, source)
    outcomes = build_rollups(core.cast.deployment)
    assert outcomes
    assert set(outcomes.values()) == {"built"}
    partitions = PreAggregationPartition.objects.filter(deployment=core.cast.deployment)
    assert {p.schema for p in partitions} == {""}
    assert {f.name for f in Path(store).glob("*/*.duckdb")} == {p.table for p in partitions}
    assert source.tables() == set()  # nothing written to the source

    for name, case in CASES.items():
        token = core.token(**case.claims) if case.claims else core.token()

        # when: asked with the rollups, then of the data source alone
        from_rollups, from_source = both(core, settings, case.query, token)

        # then: the same rows, from the rollup expected (a viewer's row policy applied on it), as PostgreSQL's
        # hand-written SQL says
        assert used(from_rollups) == ANSWERED_BY[name], name
        assert same_rows(from_rollups["data"], from_source["data"]), name
        assert from_rollups["annotation"] == from_source["annotation"], name
        if ANSWERED_BY[name] is not None:
            (entry,) = from_rollups["usedPreAggregations"].values()
            assert entry["targetTableName"].startswith(ANSWERED_BY[name].replace(".", "__")), name
        got = [tuple(_api_value(row[k]) for k in keys_of(case.query)) for row in from_rollups["data"]]
        expected = [tuple(_value(v) for v in row) for row in pg_rows(postgres_demo, case)]
        assert got == expected, name


@pytest.mark.postgres
def test_the_sql_endpoint_shows_the_statement_on_the_store(core, store, tmp_path, source):
    # given
    on_store(core, tmp_path, source)
    build_rollups(core.cast.deployment)

    # when
    body = core.post("sql", {"query": {"measures": ["orders.count"], "dimensions": ["orders.status"]}}).json()["sql"]

    # then: DuckDB's SQL on the rollup's view in the store, not the source's dialect
    assert body["sql"][0].startswith('SELECT "orders__main"."orders__status"')
    assert 'FROM "orders__main" AS "orders__main"' in body["sql"][0]
    assert 'COALESCE(SUM("orders__main"."orders__count"), 0)' in body["sql"][0]
    (described,) = body["preAggregations"]
    assert (described["preAggregationId"], described["tableName"]) == ("orders.main", "orders__main")


def range_rollups(home: Home) -> dict[str, str]:
    """A monthly-partitioned rollup whose build range ends at a bound and whose refresh key is SQL in the source's
    dialect, each with a % that PyMySQL would read as a placeholder were it sent as written."""
    if home.kind == "mariadb":
        end = f"SELECT DATE_FORMAT(MIN(created_at), '%Y-06-30') FROM {home.orders()}"
        key = f"SELECT DATE_FORMAT(MAX(created_at), '%Y-%m-%d %H') FROM {home.orders()}"
    else:
        end = f"SELECT formatDateTime(min(created_at), '%Y-06-30') FROM {home.orders()}"
        key = f"SELECT formatDateTime(max(created_at), '%Y-%m-%d %H') FROM {home.orders()}"
    return {
        "orders": f"""
    pre_aggregations:
      - name: ranged
        measures: [count, total_amount]
        dimensions: [status]
        time_dimension: created_at
        granularity: day
        partition_granularity: month
        build_range_start: {{sql: "SELECT '2022-12-01'"}}
        build_range_end:
          sql: |-
            {end}
        refresh_key:
          sql: |-
            {key}
"""
    }


@pytest.mark.postgres
def test_a_partitioned_rollup_is_built_within_its_build_range_and_answers_only_within_it(
    core, store, settings, tmp_path, source
):
    # given: partitions from December 2022 (no order: the demo's start in 2023, an empty partition) to June 2023
    on_store(core, tmp_path, source, rollups=range_rollups(source))
    assert set(build_rollups(core.cast.deployment).values()) == {"built"}
    partitions = PreAggregationPartition.objects.filter(deployment=core.cast.deployment).order_by("partition")
    assert [p.partition for p in partitions] == ["202212", "202301", "202302", "202303", "202304", "202305", "202306"]
    assert partitions[0].rows == 0
    (key,) = {p.refresh_key_value for p in partitions}
    assert key.startswith("2025-12-30 ")  # the refresh key's SQL ran on the source as written
    inside = {
        "measures": ["orders.count", "orders.total_amount"],
        "dimensions": ["orders.status"],
        "timeDimensions": [
            {"dimension": "orders.created_at", "granularity": "month", "dateRange": ["2022-12-01", "2023-06-30"]}
        ],
        "order": {"orders.created_at": "asc", "orders.status": "asc"},
    }
    outside = {**inside, "timeDimensions": [{**inside["timeDimensions"][0], "dateRange": ["2022-11-01", "2023-06-30"]}]}

    # when
    from_rollup, from_source = both(core, settings, inside)
    beyond, beyond_source = both(core, settings, outside)

    # then: the range inside is read from the partitions, equal to the source; the one beyond them from the source
    assert used(from_rollup) == "orders.ranged"
    assert from_rollup["data"]
    assert same_rows(from_rollup["data"], from_source["data"])
    assert used(beyond) is None
    assert same_rows(beyond["data"], beyond_source["data"])


@pytest.mark.postgres
def test_a_lambda_answers_with_rows_added_after_its_build_under_each_viewers_policy(
    core, store, settings, tmp_path, source
):
    # given: a lambda over a monthly-partitioned rollup, built
    on_store(core, tmp_path, source, rollups=LAMBDA)
    assert set(build_rollups(core.cast.deployment).values()) == {"built"}
    regional = {
        "measures": ["sales.order_count"],
        "dimensions": ["sales.status"],
        "timeDimensions": [{"dimension": "sales.created_at", "dateRange": ["2025-01-01", "2026-12-31"]}],
    }

    def viewers() -> dict[str, tuple[dict, dict]]:
        return {
            country: both(
                core, settings, regional, core.token(groups=["regional"], userAttributes={"country": country})
            )
            for country in ("France", "United States")
        }

    before = {name: both(core, settings, query) for name, query in QUERIES.items()}
    before_viewers = viewers()

    # when: orders are added to the source (after the last one built), nothing rebuilt
    add_orders(source, ADDED)
    after = {name: both(core, settings, query) for name, query in QUERIES.items()}
    after_viewers = viewers()

    # then: every answer comes from the lambda's rollup and the source's new rows, equal to the source's own
    for name, (from_rollups, from_source) in [*before.items(), *after.items(), *after_viewers.items()]:
        (entry,) = from_rollups["usedPreAggregations"].values()
        assert (entry["preAggregationId"], entry["rollupLambdaId"]) == ("orders.batch", "orders.recent"), name
        assert same_rows(from_rollups["data"], from_source["data"]), name

    def total(body: dict, measure: str = "orders.count") -> int:
        return sum(int(row[measure]) for row in body["data"])

    assert total(after["by status and month"][0]) == total(before["by status and month"][0]) + len(ADDED)
    months = {row["orders.created_at.month"] for row in after["by status and month"][0]["data"]}
    assert {"2026-01-01T00:00:00.000", "2026-02-01T00:00:00.000"} <= months
    # and the new orders (the first user's, in the United States) reach only that country's viewer
    counted = {
        country: (total(before_viewers[country][0], "sales.order_count"), total(answer[0], "sales.order_count"))
        for country, answer in after_viewers.items()
    }
    assert counted["France"][1] == counted["France"][0]
    assert counted["United States"][1] == counted["United States"][0] + len(ADDED)


@pytest.mark.postgres
def test_a_lambdas_source_part_beyond_the_row_limit_is_refused(core, store, settings, tmp_path, source):
    # given: a built lambda, then four orders on four days after it (four rows of its source part)
    on_store(core, tmp_path, source, rollups=LAMBDA)
    build_rollups(core.cast.deployment)
    add_orders(source, ADDED)
    query = QUERIES["by status and month"]

    # when: the limit is one row fewer, then exactly the rows
    settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "MAX_SOURCE_ROW_LIMIT": 3}
    refused = core.post("load", {"query": query, "cache": "no-cache"})
    settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "MAX_SOURCE_ROW_LIMIT": 4}
    answered, from_source = both(core, settings, query)

    # then: refused with Cube's message, never answered from the rows that fit; answered whole at the limit
    assert refused.status_code == 400
    assert refused.json() == {
        "error": "The maximum number of source rows 3 was reached for orders.recent: narrow the query's date range, "
        "or build the lambda's rollups further"
    }
    assert used(answered) == "orders.batch"
    assert same_rows(answered["data"], from_source["data"])


@pytest.mark.postgres
def test_a_rollup_using_original_sql_is_built_from_its_table_in_the_store(core, store, settings, tmp_path, source):
    # given: the orders cube's SQL materialised from the source into the store, a rollup built from it there
    on_store(core, tmp_path, source, rollups=ORIGINAL)
    build_rollups(core.cast.deployment)
    (original,) = PreAggregationPartition.objects.filter(pre_aggregation="orders.base")
    assert original.rows == 2_000
    query = {
        "measures": ["orders.count", "orders.total_amount"],
        "dimensions": ["orders.status"],
        "timeDimensions": [{"dimension": "orders.created_at", "granularity": "year"}],
        "order": {"orders.created_at": "asc", "orders.status": "asc"},
    }

    # when
    from_rollup, from_source = both(core, settings, query)

    # then
    assert used(from_rollup) == "orders.by_status"
    assert same_rows(from_rollup["data"], from_source["data"])


SLOW = """
cubes:
  - name: slow
    sql: "SELECT o.* FROM {orders} o WHERE SLEEP(0.05) = 0"
    measures:
      - name: count
        type: count
    dimensions:
      - name: status
        sql: status
        type: string
    pre_aggregations:
      - name: by_status
        measures: [count]
        dimensions: [status]
"""


@pytest.mark.postgres
def test_a_build_that_loses_its_lease_stops_its_statement_on_the_source(
    core, store, settings, tmp_path, request, postgres_demo
):
    # given: a rollup whose build statement sleeps on MariaDB for 100 s (2,000 rows, 50 ms each), its build started
    home = new_home("mariadb", request)
    settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "HEARTBEAT_SECONDS": 0.2}
    model = tmp_path / "slow"
    (model / "cubes").mkdir(parents=True)
    (model / "cubes" / "slow.yml").write_text(textwrap.dedent(SLOW).format(orders=home.orders()))
    deployment_configure(deployment=core.cast.deployment, model_dir=str(model), data_source_url=home.url)
    queued: list[int] = []
    pre_aggregations_refresh(deployment=core.cast.deployment, serve=serve, enqueue=queued.append)
    (partition_id,) = queued
    outcome: list[str] = []
    builder = threading.Thread(
        target=lambda: outcome.append(pre_aggregation_partition_build(partition_id=partition_id, serve=serve))
    )
    builder.start()
    wait_until(
        lambda: any(
            "SLEEP(0.05)" in str(row[0]) for row in home.run("SELECT info FROM information_schema.processlist")
        ),
        "the build statement running on MariaDB",
        timeout=30,
        every=0.05,
    )

    # when: another worker takes the lease over
    PreAggregationPartition.objects.filter(pk=partition_id).update(lease_owner="heir")
    builder.join(60)

    # then: the build stopped within its heartbeat, its statement killed on the source, nothing written
    assert not builder.is_alive()
    assert outcome == ["lost"]
    assert not any("SLEEP(0.05)" in str(row[0]) for row in home.run("SELECT info FROM information_schema.processlist"))
    assert not list(Path(store).glob("**/*.duckdb*"))


# -- the warehouses, their drivers' connect recorded ------------------------------------------------------------------

WAREHOUSE_MODEL = """
cubes:
  - name: orders
    sql_table: shop.orders
    measures:
      - name: count
        type: count
    dimensions:
      - name: id
        sql: id
        type: number
        primary_key: true
      - name: status
        sql: status
        type: string
      - name: created_at
        sql: created_at
        type: time
    pre_aggregations:
      - name: by_status
        measures: [count]
        dimensions: [status]
        time_dimension: created_at
        granularity: day
"""
# The build statement each warehouse is sent, in its dialect: the day in UTC, every row (no partitions).
WAREHOUSE_BUILDS = {
    "bigquery": "SELECT `orders`.status AS `orders__status`, DATETIME_TRUNC(DATETIME(CAST(`orders`.created_at AS "
    "TIMESTAMP), 'UTC'), DAY) AS `orders__created_at_day`, COUNT(`orders`.id) AS `orders__count` FROM shop.orders "
    "AS `orders` GROUP BY 1, 2",
    "databricks": "SELECT `orders`.status AS `orders__status`, DATE_TRUNC('DAY', FROM_UTC_TIMESTAMP(CAST("
    "`orders`.created_at AS TIMESTAMP), 'UTC')) AS `orders__created_at_day`, COUNT(`orders`.id) AS `orders__count` "
    "FROM shop.orders AS `orders` GROUP BY 1, 2",
    "snowflake": "SELECT \"orders\".status AS \"orders__status\", DATE_TRUNC('DAY', CAST(CONVERT_TIMEZONE('UTC', "
    'CAST("orders".created_at AS TIMESTAMP_TZ)) AS TIMESTAMP_NTZ)) AS "orders__created_at_day", COUNT("orders".id) '
    'AS "orders__count" FROM shop.orders AS "orders" GROUP BY 1, 2',
    "trino": 'SELECT "orders".status AS "orders__status", DATE_TRUNC(\'DAY\', CAST(CAST("orders".created_at AS '
    'TIMESTAMP WITH TIME ZONE) AT TIME ZONE \'UTC\' AS TIMESTAMP)) AS "orders__created_at_day", COUNT("orders".id) '
    'AS "orders__count" FROM shop.orders AS "orders" GROUP BY 1, 2',
}
DAY = datetime(2025, 1, 2)
# Each driver's description of the build's three columns (status, day, count) and the rows it answers.
WAREHOUSE_ANSWERS: dict[str, list[Any]] = {
    "trino": [
        ("orders__status", "varchar", None),
        ("orders__created_at_day", "timestamp(3)", None),
        ("orders__count", "bigint", None),
    ],
    "snowflake": [
        ("ORDERS__STATUS", 2, None, None, None, None, True),
        ("ORDERS__CREATED_AT_DAY", 8, None, None, None, None, True),
        ("ORDERS__COUNT", 0, None, None, 18, 0, True),
    ],
    "bigquery": [("orders__status", "STRING"), ("orders__created_at_day", "DATETIME"), ("orders__count", "INTEGER")],
    "databricks": [
        ("orders__status", "string", None),
        ("orders__created_at_day", "timestamp", None),
        ("orders__count", "bigint", None),
    ],
}
WAREHOUSE_ROWS = [("completed", DAY, 3), ("shipped", DAY, 2)]


@pytest.mark.parametrize("dialect", sorted(URLS))
def test_a_warehouses_rollup_is_built_into_the_store_and_read_there(
    core, store, settings, tmp_path, monkeypatch, dialect
):
    # given: a deployment on the warehouse, its rollups in the store; the driver answers the build statement
    service = Answers({"SELECT": (WAREHOUSE_ANSWERS[dialect], WAREHOUSE_ROWS)})
    if dialect == "snowflake":  # the query path submits its statements (the writers' tests need no such cursor)
        monkeypatch.setattr(snowflake_connector, "connect", recorder(service, SnowflakeCursor))
    else:
        install(monkeypatch, dialect, service)
    model = tmp_path / "model"
    (model / "cubes").mkdir(parents=True)
    (model / "cubes" / "orders.yml").write_text(textwrap.dedent(WAREHOUSE_MODEL).lstrip("\n"))
    deployment_configure(deployment=core.cast.deployment, model_dir=str(model), data_source_url=URLS[dialect])

    # when
    assert set(build_rollups(core.cast.deployment).values()) == {"built"}

    # then: one statement, the build, in the warehouse's dialect (it parses back in it)
    (build,) = [s[0] for s in service.statements if len(s) == 2 and s[0].startswith("SELECT")]
    assert build == WAREHOUSE_BUILDS[dialect]
    assert sqlglot.parse_one(build, read=dialect).sql(dialect=dialect)
    # and its rows are the store's partition
    (partition,) = PreAggregationPartition.objects.filter(deployment=core.cast.deployment)
    assert partition.rows == 2
    with duckdb.connect(str(Path(store) / str(core.cast.deployment.pk) / partition.table), read_only=True) as file:
        written = file.execute(f"SELECT * FROM {TABLE} ORDER BY 1").fetchall()
    assert written == WAREHOUSE_ROWS

    # when: a viewer's query the rollup answers
    sent = len(service.statements)
    body = load(core, {"measures": ["orders.count"], "dimensions": ["orders.status"]}, core.token())

    # then: answered from the store; the warehouse is not asked
    assert used(body) == "orders.by_status"
    assert body["data"] == [
        {"orders.status": "completed", "orders.count": "3"},
        {"orders.status": "shipped", "orders.count": "2"},
    ]
    assert len(service.statements) == sent
