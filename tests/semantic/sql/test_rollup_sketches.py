"""``count_distinct_approx`` measures of rollups kept in a warehouse, as SQL: each is built as the warehouse's sketch
(``sql/sketches.py``) and a query grouping coarser than the rollup merges the sketches and estimates the count. No
warehouse runs here: the build statement, the table the writer creates from it and the query on the rollup's table
are compared with snapshots and parsed back by sqlglot in each dialect. ClickHouse's run on chDB:
``tests/semantic/serving/test_rollup_sketches.py``.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
import sqlglot

from embedadmin.semantic import QueryContext, load_model, plan_queries
from embedadmin.semantic.modeling.model import CompiledModel
from embedadmin.semantic.serving.rollup_source import Ddl
from embedadmin.semantic.sql.builder import compile_query
from embedadmin.semantic.sql.rollups import BuiltRollup, build_query, choose_rollup, rewrite, rollup_layouts
from tests.semantic.rollup_support import model_with_rollups, with_approx_measures

ROLLUPS = {
    "orders": """
    pre_aggregations:
      - name: approx_by_status
        measures: [approx_customers, approx_completed_customers]
        dimensions: [status, users.country]
"""
}
COARSER = {
    "measures": ["orders.approx_customers", "orders.approx_completed_customers"],
    "dimensions": ["users.country"],
    "order": {"users.country": "asc"},
}
ADMIN = QueryContext(security_context={"groups": ["admin"]}, groups=["admin"])
COLUMNS = ["orders__status", "users__country", "orders__approx_customers", "orders__approx_completed_customers"]
USER_ID = "{q}orders{q}.user_id"
COMPLETED = "CASE WHEN ({q}orders{q}.status = 'completed') THEN {q}orders{q}.user_id END"
FROM = "FROM orders AS {q}orders{q} LEFT JOIN users AS {q}users{q} ON {q}orders{q}.user_id = {q}users{q}.id"
# The sketch state as the build writes it, of a value ({v}).
STATES = {
    "clickhouse": "uniqState({v})",
    "trino": "CAST(APPROX_SET({v}) AS VARBINARY)",
    "snowflake": "HLL_ACCUMULATE({v})",
    "bigquery": "HLL_COUNT.INIT({v})",
    "databricks": "HLL_SKETCH_AGG({v})",
}
# The value types each state takes as they are; others, and SQL that is no dimension (orders.user_id), cast to text.
TAKES = {"trino": {"string", "number"}, "bigquery": {"string"}, "databricks": {"string"}}
TEXT = {"trino": "VARCHAR", "bigquery": "STRING", "databricks": "STRING"}
# The merge and estimate of a sketch column ({c}) on the rollup's table.
ESTIMATES = {
    "clickhouse": "COALESCE(uniqMerge({c}), 0)",
    "trino": "COALESCE(CARDINALITY(MERGE(CAST({c} AS HYPERLOGLOG))), 0)",
    "snowflake": "COALESCE(HLL_ESTIMATE(HLL_COMBINE({c})), 0)",
    "bigquery": "COALESCE(HLL_COUNT.MERGE({c}), 0)",
    "databricks": "COALESCE(HLL_SKETCH_ESTIMATE(HLL_UNION_AGG({c})), 0)",
}
# How each writes the order the query leaves NULLs to (its own default, or the one PostgreSQL's answers have).
ORDER_TAIL = {
    "clickhouse": "ORDER BY 1 ASC",
    "trino": "ORDER BY 1 ASC",
    "snowflake": "ORDER BY 1 ASC",
    "bigquery": "ORDER BY 1 ASC NULLS LAST",
    "databricks": "ORDER BY 1 ASC NULLS LAST",
}
DIALECTS = list(STATES)
# A rollup of orders by product category: its join to line_items multiplies orders, and one of its approximate counts
# is filtered on another cube (users).
MULTIPLIED_ROLLUPS = {
    "orders": """
    pre_aggregations:
      - name: approx_by_category
        measures: [approx_customers, approx_german_customers]
        dimensions: [products.category]
      - name: approx_typed
        measures: [approx_statuses, approx_amounts, approx_days]
        dimensions: [users.country]
"""
}
GERMAN_CUSTOMERS = """
      - name: approx_german_customers
        sql: user_id
        type: count_distinct_approx
        filters:
          - sql: "{users.country} = 'Germany'"

      - name: approx_statuses
        sql: "{status}"
        type: count_distinct_approx

      - name: approx_amounts
        sql: "{amount}"
        type: count_distinct_approx

      - name: approx_days
        sql: "{created_at}"
        type: count_distinct_approx
"""


def quote(dialect: str) -> str:
    return "`" if dialect in ("bigquery", "databricks") else '"'


def state(dialect: str, value: str, value_type: str | None = None) -> str:
    """The sketch state of ``value`` (SQL, {q} for the quote), of ``value_type`` (None: not known)."""
    value = value.format(q=quote(dialect))
    if dialect in TAKES and value_type not in TAKES[dialect]:
        value = f"CAST({value} AS {TEXT[dialect]})"
    return STATES[dialect].format(v=value)


def expected_build(dialect: str) -> str:
    q = quote(dialect)
    return (
        f"SELECT {q}orders{q}.status AS {q}orders__status{q}, {q}users{q}.country AS {q}users__country{q}, "
        f"{state(dialect, USER_ID)} AS {q}orders__approx_customers{q}, "
        f"{state(dialect, COMPLETED)} AS {q}orders__approx_completed_customers{q} "
        f"{FROM.format(q=q)} GROUP BY 1, 2"
    )


def expected_read(dialect: str) -> str:
    q = quote(dialect)
    table = f"{q}orders__approx_by_status{q}"

    def estimate(column: str) -> str:
        return ESTIMATES[dialect].format(c=f"{table}.{q}{column}{q}")

    prefix = f"{q}orders__approx_by_status__"
    return (
        f"SELECT {table}.{q}users__country{q} AS {prefix}users__country{q}, "
        f"{estimate('orders__approx_customers')} AS {prefix}orders__approx_customers{q}, "
        f"{estimate('orders__approx_completed_customers')} AS {prefix}orders__approx_completed_customers{q} "
        f"FROM {q}rollups{q}.{q}r1_t{q} AS {table} GROUP BY 1 {ORDER_TAIL[dialect]} LIMIT 10000"
    )


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return with_approx_measures(model_with_rollups(tmp_path_factory.mktemp("sketches") / "model", rollups=ROLLUPS))


@pytest.fixture(scope="module")
def multiplied_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return with_german_customers(
        with_approx_measures(model_with_rollups(tmp_path_factory.mktemp("m") / "model", rollups=MULTIPLIED_ROLLUPS))
    )


def with_german_customers(model: Path) -> Path:
    """The model at ``model`` (with :func:`with_approx_measures`) with an approximate count filtered on users and
    approximate counts of a string, a number and a time dimension."""
    orders = model / "cubes" / "orders.yml"
    text = orders.read_text()
    orders.write_text(text.replace("\n    measures:\n", "\n    measures:\n" + GERMAN_CUSTOMERS.lstrip("\n") + "\n", 1))
    return model


def model_in(model_path: Path, dialect: str) -> CompiledModel:
    return load_model(model_path, dialect=dialect, check_interval=0).require()


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_build_stores_each_approximate_count_as_the_warehouses_sketch(model_path, dialect: str) -> None:
    # given
    model = model_in(model_path, dialect)
    layout = rollup_layouts(model)["orders.approx_by_status"]

    # when: built for the data source's schema, then as the DuckDB store would have it
    in_source = build_query(model, layout, in_source=True)
    in_store = build_query(model, layout)

    # then: the sketch aggregate in the source; the approximate count itself for the store
    assert (in_source.sql, in_source.params) == (expected_build(dialect), ())
    assert len(sqlglot.parse(in_source.sql, read=dialect)) == 1
    created = Ddl(dialect).create_table_as("rollups", "r1_t", in_source.sql, COLUMNS)
    assert len(sqlglot.parse(created, read=dialect)) == 1
    assert state(dialect, USER_ID) not in in_store.sql


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_coarser_query_merges_the_sketches_and_estimates(model_path, dialect: str) -> None:
    # given: the rollup kept in the warehouse's schema "rollups"
    model = model_in(model_path, dialect)
    built = {
        "orders.approx_by_status": BuiltRollup(
            table="t", version="1", last_updated_at=datetime(2026, 1, 1), source_tables=(("rollups", "r1_t"),)
        )
    }
    (compiled,) = plan_queries(model, COARSER, ADMIN).queries

    # when
    choice = choose_rollup(model, compiled, ADMIN, built, source_dialect=dialect, rollup_dialect=dialect)
    assert choice is not None
    on_rollup = rewrite(model, compiled, choice, lambda m, q: compile_query(m, q, QueryContext()))

    # then: merged and estimated per country, in the warehouse's dialect
    assert choice.how == "additive"
    assert on_rollup is not None
    assert on_rollup.sql == expected_read(dialect)
    assert len(sqlglot.parse(on_rollup.sql, read=dialect)) == 1


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_sketch_of_a_cube_the_rollups_joins_multiply_is_built_over_the_joins(multiplied_path, dialect: str) -> None:
    # given: orders multiplied by line_items in the rollup, a sketch filtered on users
    model = model_in(multiplied_path, dialect)
    layout = rollup_layouts(model)["orders.approx_by_category"]
    assert layout.problem is None

    # when
    built = build_query(model, layout, in_source=True)

    # then: the sketches are aggregated over the joined rows as they are (duplicated orders add no distinct value),
    # in one grouping by category, the filter reading the joined users
    q = quote(dialect)
    german = "CASE WHEN ({q}users{q}.country = 'Germany') THEN {q}orders{q}.user_id END"
    assert built.sql.startswith(
        f"SELECT {q}products{q}.category AS {q}products__category{q}, "
        f"{state(dialect, USER_ID)} AS {q}orders__approx_customers{q}, "
        f"{state(dialect, german)} AS {q}orders__approx_german_customers{q} FROM orders AS {q}orders{q} "
    ), built.sql
    assert built.sql.endswith(" GROUP BY 1"), built.sql
    assert "keys" not in built.sql
    assert len(sqlglot.parse(built.sql, read=dialect)) == 1


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_sketch_takes_a_value_of_a_type_it_does_not_take_as_text(multiplied_path, dialect: str) -> None:
    # given: approximate counts of a string (status), a number (amount) and a time (created_at) dimension
    model = model_in(multiplied_path, dialect)
    layout = rollup_layouts(model)["orders.approx_typed"]

    # when
    built = build_query(model, layout, in_source=True)

    # then: each cast to text where the warehouse's sketch does not take its type (dates, timestamps, decimals)
    q = quote(dialect)
    assert built.sql.startswith(
        f"SELECT {q}users{q}.country AS {q}users__country{q}, "
        f"{state(dialect, '{q}orders{q}.status', 'string')} AS {q}orders__approx_statuses{q}, "
        f"{state(dialect, '{q}orders{q}.amount', 'number')} AS {q}orders__approx_amounts{q}, "
        f"{state(dialect, '{q}orders{q}.created_at', 'time')} AS {q}orders__approx_days{q} FROM "
    ), built.sql
    assert len(sqlglot.parse(built.sql, read=dialect)) == 1
