"""The ``/v1/cubesql`` wire format (schema line, data lines, error line, value serialization), the Cube query
a statement translates to, and access policies applied to semantic SQL exactly as to ``/v1/load``."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest

from embedadmin.semantic import QueryContext, QueryError
from embedadmin.semantic.cubesql.plan import (
    CubeSqlPlan,
    cubesql_error_line,
    cubesql_lines,
    cubesql_plan,
)
from embedadmin.semantic.sources.base import DataSourceError
from tests.semantic.conftest import NOW, run_query, shop_model
from tests.semantic.cubesql_support import ADMIN, data, run_sql
from tests.semantic.databases import Executor
from tests.semantic.query.test_policies import ANALYST_DE, MANAGER, NOBODY, READER, secure_model


def plan(sql: str, ctx: QueryContext = ADMIN, **options: Any) -> CubeSqlPlan:
    return cubesql_plan(shop_model("duckdb"), sql, ctx, now=NOW, **options)


def engine_row(statement: CubeSqlPlan, values: list[Any]) -> list[Any]:
    """A row as the compiled statement returns it: ``values`` (in SELECT order) at their columns' positions."""
    row: list[Any] = [None] * len(statement.compiled.columns)
    for column, value in zip(statement.columns, values, strict=True):
        row[column.index] = value
    return row


# -- the schema line ----------------------------------------------------------------------------------


def test_schema_names_types_formats_and_currencies_in_select_order(executor: Executor) -> None:
    schema, _ = run_sql(
        executor,
        "SELECT DATE_TRUNC('month', created_at) AS month, status, amount, big_basket, MEASURE(count), "
        "SUM(revenue) AS revenue, AVG(average_amount), COUNT(DISTINCT customers) AS buyers, "
        "MEASURE(completed_share) FROM orders GROUP BY 1, 2, 3, 4",
    )

    assert schema == [
        {"name": "month", "column_type": "Timestamp"},
        {"name": "status", "column_type": "String"},
        {"name": "amount", "column_type": "Double", "format": "currency"},
        {"name": "big_basket", "column_type": "Boolean"},
        {"name": "measure(orders.count)", "column_type": "Int64"},
        {
            "name": "revenue",
            "column_type": "Double",
            "format": {"type": "custom-numeric", "value": "$,.2~f", "alias": "currency_2"},
            "currency": "USD",
        },
        {"name": "avg(orders.average_amount)", "column_type": "Double"},
        {"name": "buyers", "column_type": "Int64"},
        {"name": "measure(orders.completed_share)", "column_type": "Double", "format": "percent"},
    ]


def test_schema_of_view_members_and_star() -> None:
    statement = plan("SELECT * FROM orders_view LIMIT 1")

    assert [(c["name"], c["column_type"]) for c in statement.schema()] == [
        ("status", "String"),
        ("created_at", "Timestamp"),
        ("users_id", "Double"),
        ("users_name", "String"),
        ("users_country", "String"),
        ("users_city", "String"),
        ("users_created_at", "Timestamp"),
    ]


def test_a_member_selected_twice_fills_both_columns(executor: Executor) -> None:
    schema, rows = run_sql(executor, "SELECT status, status AS again, MEASURE(count) FROM orders GROUP BY 1 ORDER BY 1")

    assert [c["name"] for c in schema] == ["status", "again", "measure(orders.count)"]
    assert rows[0] == ["cancelled", "cancelled", "1"]


# -- data lines ---------------------------------------------------------------------------------------


def test_lines_are_a_schema_line_then_data_chunks() -> None:
    statement = plan("SELECT status, MEASURE(count) FROM orders GROUP BY 1")
    rows = [engine_row(statement, [f"s{i}", i]) for i in range(5)]

    lines = list(cubesql_lines(statement, rows, chunk_size=2))

    assert lines == [
        '{"schema":[{"name":"status","column_type":"String"},{"name":"measure(orders.count)","column_type":"Int64"}]}\n',
        '{"data":[["s0","0"],["s1","1"]]}\n',
        '{"data":[["s2","2"],["s3","3"]]}\n',
        '{"data":[["s4","4"]]}\n',
    ]


def test_an_empty_result_still_sends_one_data_line(executor: Executor) -> None:
    statement = cubesql_plan(
        shop_model(executor.dialect), "SELECT status FROM orders WHERE status = 'none'", ADMIN, now=NOW
    )
    _, rows = executor.run(statement.compiled.sql, statement.compiled.params)

    lines = list(cubesql_lines(statement, rows))

    assert lines[1:] == ['{"data":[]}\n']


def test_a_full_last_chunk_is_not_followed_by_an_empty_one() -> None:
    statement = plan("SELECT status FROM orders")

    lines = list(cubesql_lines(statement, [engine_row(statement, ["a"]), engine_row(statement, ["b"])], chunk_size=2))

    assert lines[1:] == ['{"data":[["a"],["b"]]}\n']


def test_last_refresh_time_is_in_the_schema_line() -> None:
    statement = plan("SELECT status FROM orders")

    first = next(cubesql_lines(statement, [], last_refresh_time=datetime(2025, 1, 13, 13, 0, tzinfo=UTC)))

    assert json.loads(first)["lastRefreshTime"] == "2025-01-13T13:00:00.000Z"


def test_values_are_strings_except_null_and_booleans() -> None:
    statement = plan(
        "SELECT status, amount, created_at, big_basket, MEASURE(count), MEASURE(average_amount), "
        "MEASURE(min_created) FROM orders GROUP BY 1, 2, 3, 4"
    )
    rows = [
        engine_row(
            statement,
            ["a'b\"c", Decimal("12.50"), datetime(2024, 1, 2, 3, 4, 5, 678901), True, 7, 3.5, date(2024, 5, 6)],
        ),
        engine_row(statement, [None, 1e21, "2024-02-03 04:05:06", False, 0, float("nan"), None]),
        engine_row(statement, ["ü", 2.0, datetime(2024, 1, 1, 23, 0, tzinfo=UTC), None, 10**20, Decimal("1E+2"), None]),
    ]

    lines = list(cubesql_lines(statement, rows))

    assert json.loads(lines[1])["data"] == [
        ["a'b\"c", "12.50", "2024-01-02T03:04:05.678", True, "7", "3.5", "2024-05-06T00:00:00.000"],
        [None, "1000000000000000000000", "2024-02-03T04:05:06.000", False, "0", "NaN", None],
        ["ü", "2", "2024-01-01T23:00:00.000", None, "100000000000000000000", "100", None],
    ]


def test_timestamps_of_a_time_zone_query_are_local(executor: Executor) -> None:
    rows = data(
        executor,
        "SELECT DATE_TRUNC('day', created_at) AS d FROM orders WHERE created_at < '2024-02-01T01:00:00' "
        "GROUP BY 1 ORDER BY 1",
        timezone="Europe/Berlin",
    )

    assert rows == [["2024-01-15T00:00:00.000"], ["2024-02-01T00:00:00.000"]]


# -- the error line -----------------------------------------------------------------------------------


def _failing(statement: CubeSqlPlan, error: Exception) -> Iterator[list[Any]]:
    yield engine_row(statement, ["a"])
    raise error


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (DataSourceError("Query timeout: the query ran longer than 5 s and was stopped"), None),
        (QueryError("The query is broken"), None),
    ],
    ids=["data source error", "api error"],
)
def test_an_error_after_the_first_line_is_a_final_error_line(error: Exception, message: str | None) -> None:
    statement = plan("SELECT status FROM orders")

    lines = list(cubesql_lines(statement, _failing(statement, error), chunk_size=1, request_id="req-1"))

    assert lines[1:] == [
        '{"data":[["a"]]}\n',
        json.dumps({"error": str(error), "requestId": "req-1"}, separators=(",", ":")) + "\n",
    ]


def test_an_internal_fault_is_logged_and_not_shown(caplog: pytest.LogCaptureFixture) -> None:
    statement = plan("SELECT status FROM orders")

    with caplog.at_level(logging.ERROR, logger="embedadmin.semantic.cubesql.plan"):
        lines = list(cubesql_lines(statement, _failing(statement, KeyError("secret detail"))))

    assert lines[-1] == '{"error":"Internal Server Error"}\n'
    assert "secret detail" not in "".join(lines)
    logged = [r for r in caplog.records if r.name == "embedadmin.semantic.cubesql.plan"]
    assert [r.message for r in logged] == ["cubesql stream failed"]
    assert logged[0].exc_info is not None


def test_error_line_without_a_request_id() -> None:
    assert cubesql_error_line("Continue wait") == '{"error":"Continue wait"}\n'


def test_chunk_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="chunk_size must be at least 1"):
        list(cubesql_lines(plan("SELECT status FROM orders"), [], chunk_size=0))


# -- the Cube query a statement means -----------------------------------------------------------------


def test_the_translated_query_is_a_cube_query() -> None:
    statement = plan(
        "SELECT status, DATE_TRUNC('month', o.created_at) AS m, MEASURE(count) AS n FROM orders o "
        "WHERE finished AND amount BETWEEN 10 AND 100 AND user_country <> 'DE' "
        "GROUP BY 1, 2 HAVING MEASURE(count) > 1 ORDER BY n DESC, m LIMIT 10 OFFSET 5",
        timezone="Europe/Berlin",
    )

    assert statement.query == {
        "measures": ["orders.count"],
        "dimensions": ["orders.status"],
        "timeDimensions": [{"dimension": "orders.created_at", "granularity": "month"}],
        "segments": ["orders.finished"],
        "filters": [
            {"member": "orders.amount", "operator": "gte", "values": ["10"]},
            {"member": "orders.amount", "operator": "lte", "values": ["100"]},
            {"member": "orders.user_country", "operator": "notEquals", "values": ["DE", None]},
            {"member": "orders.count", "operator": "gt", "values": ["1"]},
        ],
        "order": [["orders.count", "desc"], ["orders.created_at.month", "asc"]],
        "limit": 10,
        "timezone": "Europe/Berlin",
        "offset": 5,
    }


def test_the_query_for_convert_query() -> None:
    query = plan("SELECT MEASURE(revenue) FROM orders WHERE status = 'foo'").query

    assert query == {
        "measures": ["orders.revenue"],
        "dimensions": [],
        "timeDimensions": [],
        "segments": [],
        "filters": [{"member": "orders.status", "operator": "equals", "values": ["foo"]}],
        "order": [],
        "limit": 50_000,
        "timezone": "UTC",
    }


def test_an_ungrouped_statement_is_an_ungrouped_query() -> None:
    statement = plan("SELECT status, created_at FROM orders WHERE created_at >= '2024-06-01 12:00'")

    assert statement.query["ungrouped"] is True
    assert statement.query["filters"] == [
        {"member": "orders.created_at", "operator": "gte", "values": ["2024-06-01T12:00:00.000"]}
    ]
    assert statement.query["order"] == []
    assert statement.query["limit"] == 50_000


def test_bounds_on_a_truncated_time_dimension_become_its_date_range_for_rolling_windows() -> None:
    rolling = plan(
        "SELECT DATE_TRUNC('day', created_at), MEASURE(revenue_7d) FROM orders "
        "WHERE created_at > '2024-01-01' AND created_at < '2024-02-01' AND amount > 1 GROUP BY 1"
    )
    between = plan(
        "SELECT DATE_TRUNC('day', created_at), MEASURE(revenue_7d) FROM orders "
        "WHERE created_at BETWEEN '2024-01-01' AND '2024-02-01' GROUP BY 1"
    )
    plain = plan(
        "SELECT DATE_TRUNC('day', created_at), MEASURE(revenue) FROM orders "
        "WHERE created_at > '2024-01-01' AND created_at < '2024-02-01' GROUP BY 1"
    )

    assert rolling.query["timeDimensions"] == [
        {
            "dimension": "orders.created_at",
            "granularity": "day",
            "dateRange": ["2024-01-01T00:00:00.001", "2024-01-31T23:59:59.999"],
        }
    ]
    assert rolling.query["filters"] == [{"member": "orders.amount", "operator": "gt", "values": ["1"]}]
    assert between.query["timeDimensions"][0]["dateRange"] == ["2024-01-01T00:00:00.000", "2024-02-01T00:00:00.000"]
    assert between.query["filters"] == []
    assert "dateRange" not in plain.query["timeDimensions"][0]
    assert len(plain.query["filters"]) == 2


def test_cross_join_tables_become_join_hints() -> None:
    statement = plan("SELECT u.city, MEASURE(o.count) FROM orders o CROSS JOIN users u GROUP BY 1")

    assert statement.query["joinHints"] == [["orders"], ["users"]]


def test_no_implicit_order() -> None:
    statement = plan("SELECT status, MEASURE(count) FROM orders GROUP BY 1")

    assert "ORDER BY" not in statement.compiled.sql


# -- access policies ----------------------------------------------------------------------------------


def secure(executor: Executor, sql: str, ctx: QueryContext) -> list[list[Any]]:
    return run_sql(executor, sql, ctx, model=secure_model(executor.dialect))[1]


@pytest.mark.parametrize(
    ("ctx", "sql", "expected"),
    [
        (NOBODY, "SELECT MEASURE(count) FROM secure_orders", [["0"]]),
        (READER, "SELECT MEASURE(count) FROM secure_orders", [["8"]]),
        (
            READER,
            "SELECT status, COUNT(*) FROM secure_orders GROUP BY 1 ORDER BY 1",
            [["completed", "6"], ["shipped", "2"]],
        ),
        (READER, "SELECT MEASURE(count) FROM secure_orders WHERE status = 'cancelled'", [["0"]]),
        (READER, "SELECT MEASURE(count) FROM secure_orders WHERE status = 'cancelled' OR status <> 'x'", [["8"]]),
        (MANAGER, "SELECT SUM(revenue) FROM secure_orders", [["645"]]),
        (ANALYST_DE, "SELECT name FROM secure_users ORDER BY name", [["Ada"], ["Bob"]]),
        (
            ADMIN,
            "SELECT status, MEASURE(count) FROM secure_view GROUP BY 1 ORDER BY 1",
            [["completed", "6"], ["processing", "1"], ["shipped", "2"]],
        ),
    ],
    ids=[
        "no matching values: no rows",
        "row filter from the security context",
        "row filter per group",
        "a WHERE can't widen the row filter",
        "an OR can't widen the row filter",
        "union of two policies",
        "row filter from user attributes",
        "a view's own row filter",
    ],
)
def test_row_level_policies_restrict_rows(executor: Executor, ctx: QueryContext, sql: str, expected: list[Any]) -> None:
    assert secure(executor, sql, ctx) == expected


def test_rows_match_the_same_query_through_load(executor: Executor) -> None:
    model = secure_model(executor.dialect)
    body = run_query(
        executor, {"measures": ["secure_orders.count"], "dimensions": ["secure_orders.status"]}, READER, model=model
    )

    rows = secure(executor, "SELECT status, MEASURE(count) FROM secure_orders GROUP BY 1", READER)

    assert sorted(rows) == sorted([row["secure_orders.status"], row["secure_orders.count"]] for row in body["data"])


@pytest.mark.parametrize(
    ("ctx", "sql", "message"),
    [
        (READER, "SELECT amount FROM secure_orders", "Column 'amount' not found in 'secure_orders'"),
        (READER, "SELECT SUM(revenue) FROM secure_orders", "Column 'revenue' not found in 'secure_orders'"),
        (READER, "SELECT status FROM secure_orders WHERE amount > 10", "Column 'amount' not found in 'secure_orders'"),
        (MANAGER, "SELECT amount FROM secure_orders", "Column 'amount' not found in 'secure_orders'"),
        (
            READER,
            "SELECT name FROM secure_users",
            "Table 'secure_users' not found: only cubes and views can be queried",
        ),
        (READER, "SELECT status FROM orders", "Table 'orders' not found: only cubes and views can be queried"),
    ],
    ids=[
        "member denied by policy",
        "measure denied by policy",
        "filter on a denied member",
        "member excluded for a group",
        "table without a matching policy",
        "the underlying table",
    ],
)
def test_denied_members_and_tables_do_not_exist(executor: Executor, ctx: QueryContext, sql: str, message: str) -> None:
    with pytest.raises(QueryError) as error:
        secure(executor, sql, ctx)

    assert error.value.message == message


def test_star_lists_only_the_members_the_caller_may_see() -> None:
    statement = cubesql_plan(secure_model(), "SELECT * FROM secure_orders", READER)

    assert [c.name for c in statement.columns] == ["status"]
