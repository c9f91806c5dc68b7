"""SQL generation for the less common model constructs, on both databases where data is involved."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from embedadmin.semantic import QueryContext, QueryError, load_model, plan_queries
from tests.semantic.conftest import FIXTURES, NOW, run_query, shop_model
from tests.semantic.databases import Executor

ADMIN = QueryContext(groups=["admin"])


def rows(body: dict[str, Any]) -> list[list[Any]]:
    return [list(row.values()) for row in body["data"]]


def test_boolean_dimension_built_from_a_comparison_can_be_filtered(executor: Executor) -> None:
    body = run_query(
        executor,
        {
            "measures": ["orders.count"],
            "dimensions": ["orders.big_basket"],
            "filters": [{"member": "orders.big_basket", "operator": "equals", "values": [True]}],
        },
    )

    assert rows(body) == [[True, "1"]]


def test_case_dimension_filter(executor: Executor) -> None:
    body = run_query(
        executor,
        {
            "measures": ["users.count"],
            "filters": [{"member": "users.tier", "operator": "notEquals", "values": ["bronze"]}],
        },
    )

    assert rows(body) == [["3"]]


def test_view_segments_and_view_custom_granularities(executor: Executor) -> None:
    body = run_query(
        executor,
        {
            "measures": ["orders_view.count"],
            "segments": ["orders_view.users_german"],
            "timeDimensions": [{"dimension": "orders_view.created_at", "granularity": "fiscal_year"}],
        },
        ADMIN,
    )

    assert rows(body) == [
        ["2023-04-01T00:00:00.000", "2023-04-01T00:00:00.000", "3"],
        ["2024-04-01T00:00:00.000", "2024-04-01T00:00:00.000", "1"],
    ]


def test_join_hints_add_cubes_to_the_join_tree() -> None:
    plan = plan_queries(shop_model("duckdb"), {"measures": ["orders.count"], "joinHints": [["orders", "users"]]}, ADMIN)

    assert plan.queries[0].hints["joins"] == ["users"]
    assert 'LEFT JOIN users AS "users" ON "orders".user_id = "users".id' in plan.queries[0].sql


def test_cubes_without_a_join_path_are_refused() -> None:
    with pytest.raises(QueryError, match="Can't find join path to join 'users', 'products'"):
        plan_queries(shop_model("duckdb"), {"measures": ["users.count", "products.count"]}, ADMIN)


def test_count_distinct_approx_is_approximate_on_duckdb_and_exact_on_postgres() -> None:
    duck = plan_queries(shop_model("duckdb"), {"measures": ["orders.customers"]}, ADMIN)
    model = load_model(FIXTURES / "catalog", dialect="postgres", check_interval=0).require()
    postgres = plan_queries(model, {"measures": ["items.distinct_skus"]}, ADMIN)
    duck_catalog = plan_queries(
        load_model(FIXTURES / "catalog", dialect="duckdb").require(), {"measures": ["items.distinct_skus"]}, ADMIN
    )

    assert 'COUNT(DISTINCT "orders".user_id)' in duck.queries[0].sql
    assert 'COUNT(DISTINCT "items".sku)' in postgres.queries[0].sql
    assert 'APPROX_COUNT_DISTINCT("items".sku)' in duck_catalog.queries[0].sql


def test_geo_dimensions_concatenate_latitude_and_longitude() -> None:
    model = load_model(FIXTURES / "catalog", dialect="postgres", check_interval=0).require()

    plan = plan_queries(model, {"dimensions": ["items.location"]}, ADMIN)

    assert plan.queries[0].sql.startswith('SELECT "items".lat || \',\' || "items".lng AS "items__location"')


def write_model(root: Path, text: str) -> Any:
    (root / "cubes").mkdir(parents=True, exist_ok=True)
    (root / "cubes" / "model.yml").write_text(textwrap.dedent(text))
    return load_model(root, dialect="duckdb", check_interval=0).require()


def test_cube_sql_reference_reuses_another_cubes_sql(tmp_path: Path, duck: Executor) -> None:
    model = write_model(
        tmp_path,
        """
        cubes:
          - name: big_orders
            sql: "SELECT * FROM orders WHERE amount >= 60"
            measures:
              - name: count
                type: count
          - name: big_completed
            sql: "SELECT * FROM {big_orders.sql()} AS b WHERE b.status = 'completed'"
            measures:
              - name: count
                type: count
        """,
    )

    body = run_query(duck, {"measures": ["big_completed.count"]}, model=model)

    assert rows(body) == [["3"]]


def test_circular_references_are_query_errors(tmp_path: Path) -> None:
    model = write_model(
        tmp_path,
        """
        cubes:
          - name: loop
            sql_table: t
            dimensions:
              - name: a
                sql: "{b} + 1"
                type: number
              - name: b
                sql: "{a} + 1"
                type: number
        """,
    )

    with pytest.raises(QueryError, match=r"^Circular reference: loop\.b -> loop\.a -> loop\.b$"):
        plan_queries(model, {"dimensions": ["loop.a"]}, QueryContext(), now=NOW)


def test_measures_reference_dimensions_of_other_cubes(tmp_path: Path, duck: Executor) -> None:
    model = write_model(
        tmp_path,
        """
        cubes:
          - name: orders
            sql_table: orders
            joins:
              - name: users
                sql: "{CUBE}.user_id = {users.id}"
                relationship: many_to_one
            dimensions:
              - name: id
                sql: id
                type: number
                primary_key: true
            measures:
              - name: german_revenue
                sql: "CASE WHEN {users.country} = 'DE' THEN amount ELSE 0 END"
                type: sum
          - name: users
            sql_table: users
            dimensions:
              - name: id
                sql: id
                type: number
                primary_key: true
              - name: country
                sql: country
                type: string
        """,
    )

    body = run_query(duck, {"measures": ["orders.german_revenue"]}, model=model)

    assert rows(body) == [["265"]]


def test_calculated_measures_cannot_be_ungrouped() -> None:
    with pytest.raises(QueryError, match=r"'items\.last_added' of type time cannot be used in an ungrouped query"):
        plan_queries(
            load_model(FIXTURES / "catalog", dialect="duckdb").require(),
            {"measures": ["items.last_added"], "dimensions": ["items.name"], "ungrouped": True},
            ADMIN,
        )
