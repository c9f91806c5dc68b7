"""Cube's response shapes: ``/v1/load`` (regular, multi, compact, columnar, compare, blending), ``/v1/sql``,
``/v1/dry-run``, value serialization and annotation."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest

from embedadmin.semantic import (
    QueryContext,
    QueryError,
    QueryOutcome,
    dry_run_response,
    load_response,
    parse_query_param,
    plan_queries,
    sql_response,
)
from embedadmin.semantic.results.shaping import convert
from tests.semantic.conftest import NOW, run_query, shop_model
from tests.semantic.databases import DuckDBExecutor


@pytest.mark.parametrize(
    ("value", "value_type", "expected"),
    [
        (700, "number", "700"),
        (Decimal("0.80000000000000000000"), "number", "0.80000000000000000000"),
        (Decimal("1E+2"), "number", "100"),
        (2.5, "number", "2.5"),
        (3.0, "number", "3"),
        (1e-7, "number", "0.0000001"),
        (1.5e22, "number", "15000000000000000000000"),
        (None, "number", None),
        (True, "boolean", True),
        ("x", "string", "x"),
        (Decimal("5"), "string", "5"),
        (datetime(2024, 1, 2, 3, 4, 5, 678901), "time", "2024-01-02T03:04:05.678"),
        (datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), "time", "2024-01-02T03:04:05.000"),
        (date(2024, 1, 2), "time", "2024-01-02T00:00:00.000"),
        ("2024-01-02 03:04:05", "time", "2024-01-02T03:04:05.000"),
    ],
)
def test_values_are_serialized_as_cube_does(value: Any, value_type: str, expected: Any) -> None:
    assert convert(value, value_type) == expected


def test_regular_load_body(run_duck) -> None:
    body = run_duck(
        {
            "measures": ["orders.count"],
            "dimensions": ["orders.status"],
            "segments": ["orders.finished"],
            "filters": [{"member": "orders.status", "operator": "equals", "values": ["shipped"]}],
        }
    )

    assert body == {
        "query": {
            "measures": ["orders.count"],
            "dimensions": ["orders.status"],
            "timeDimensions": [],
            "segments": ["orders.finished"],
            "filters": [{"member": "orders.status", "operator": "equals", "values": ["shipped"]}],
            "limit": 10000,
            "rowLimit": 10000,
            "timezone": "UTC",
        },
        "data": [{"orders.status": "shipped", "orders.count": "2"}],
        "annotation": {
            "measures": {
                "orders.count": {
                    "title": "Orders Count",
                    "shortTitle": "Count",
                    "type": "number",
                    "drillMembers": ["orders.id", "orders.status", "users.city"],
                    "drillMembersGrouped": {"measures": [], "dimensions": ["orders.id", "orders.status", "users.city"]},
                }
            },
            "dimensions": {
                "orders.status": {
                    "title": "Orders Status",
                    "shortTitle": "Status",
                    "description": "Order status",
                    "type": "string",
                }
            },
            "segments": {"orders.finished": {"title": "Orders Finished", "shortTitle": "Finished"}},
            "timeDimensions": {},
        },
        "dataSource": "default",
        "dbType": "duckdb",
        "external": False,
        "slowQuery": False,
    }


def test_multi_envelope_with_total_and_last_refresh_time(duck: DuckDBExecutor) -> None:
    model = shop_model("duckdb")
    plan = plan_queries(model, '{"measures": ["orders.revenue"], "total": true}', QueryContext(), now=NOW)
    compiled = plan.queries[0]
    rows = duck.run(compiled.sql, compiled.params)[1]
    total = duck.run(compiled.total_sql, compiled.params)[1][0][0]
    refreshed = datetime(2025, 1, 13, 12, 0, tzinfo=UTC)

    body = load_response(model, plan, [QueryOutcome(rows, total, refreshed)], multi=True, db_type="duckdb")

    assert body["queryType"] == "regularQuery"
    assert body["slowQuery"] is False
    assert body["pivotQuery"] == {**body["results"][0]["query"], "queryType": "regularQuery"}
    result = body["results"][0]
    assert result["data"] == [{"orders.revenue": "675"}]
    assert result["total"] == 1
    assert result["lastRefreshTime"] == "2025-01-13T12:00:00.000Z"
    assert result["annotation"]["measures"]["orders.revenue"]["format"] == {
        "type": "custom-numeric",
        "value": "$,.2~f",
        "alias": "currency_2",
    }
    assert result["annotation"]["measures"]["orders.revenue"]["currency"] == "USD"


@pytest.mark.parametrize(
    ("response_format", "data"),
    [
        (
            "compact",
            {
                "members": ["orders.status", "orders.count"],
                "dataset": [["completed", "6"], ["shipped", "2"]],
            },
        ),
        (
            "columnar",
            {"members": ["orders.status", "orders.count"], "columns": [["completed", "shipped"], ["6", "2"]]},
        ),
    ],
)
def test_compact_and_columnar_response_formats(run_duck, response_format: str, data: dict[str, Any]) -> None:
    body = run_duck(
        {"measures": ["orders.count"], "dimensions": ["orders.status"], "responseFormat": response_format, "limit": 2}
    )

    assert body["data"] == data


def test_compare_date_range_fans_out_and_needs_multi(run_duck) -> None:
    query = {
        "measures": ["orders.count"],
        "timeDimensions": [
            {
                "dimension": "orders.created_at",
                "granularity": "month",
                "compareDateRange": ["last month", ["2024-01-01", "2024-01-31"]],
            }
        ],
    }
    body = run_duck(query, multi=True)

    assert body["queryType"] == "compareDateRangeQuery"
    assert [r["query"]["timeDimensions"][0]["dateRange"] for r in body["results"]] == [
        ["2024-06-01T00:00:00.000", "2024-06-30T23:59:59.999"],
        ["2024-01-01T00:00:00.000", "2024-01-31T23:59:59.999"],
    ]
    assert body["results"][1]["data"] == [
        {
            "orders.created_at.month": "2024-01-01T00:00:00.000",
            "orders.created_at": "2024-01-01T00:00:00.000",
            "orders.count": "2",
            "compareDateRange": "2024-01-01T00:00:00.000 - 2024-01-31T23:59:59.999",
        }
    ]
    assert body["pivotQuery"]["dimensions"] == ["compareDateRange"]
    assert body["pivotQuery"]["queryType"] == "compareDateRangeQuery"
    with pytest.raises(QueryError, match=r"'compareDateRangeQuery' query type is not supported by the client\."):
        run_duck(query, multi=False)


def test_blending_query(run_duck) -> None:
    body = run_duck(
        [
            {
                "measures": ["orders.count"],
                "timeDimensions": [{"dimension": "orders.created_at", "granularity": "year"}],
            },
            {"measures": ["users.count"], "timeDimensions": [{"dimension": "users.created_at", "granularity": "year"}]},
        ],
        multi=True,
    )

    assert body["queryType"] == "blendingQuery"
    assert body["results"][1]["data"] == [
        {
            "users.created_at.year": "2023-01-01T00:00:00.000",
            "users.created_at": "2023-01-01T00:00:00.000",
            "users.count": "4",
            "time.year": "2023-01-01T00:00:00.000",
        },
        {
            "users.created_at.year": "2024-01-01T00:00:00.000",
            "users.created_at": "2024-01-01T00:00:00.000",
            "users.count": "1",
            "time.year": "2024-01-01T00:00:00.000",
        },
    ]
    assert body["pivotQuery"]["measures"] == ["orders.count", "users.count"]
    assert body["pivotQuery"]["timeDimensions"] == [{"dimension": "time", "granularity": "year"}]


@pytest.mark.parametrize(
    ("queries", "message"),
    [
        (
            [{"measures": ["orders.count"]}, {"measures": ["users.count"]}],
            "Data blending query without granularity is not supported",
        ),
        (
            [
                {
                    "measures": ["orders.count"],
                    "timeDimensions": [{"dimension": "orders.created_at", "granularity": "year"}],
                },
                {
                    "measures": ["users.count"],
                    "timeDimensions": [{"dimension": "users.created_at", "granularity": "day"}],
                },
            ],
            "Data blending query granularities must match",
        ),
    ],
)
def test_blending_rules(queries: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(QueryError, match=message):
        plan_queries(shop_model("duckdb"), queries, QueryContext())


def test_annotation_of_time_dimensions_with_custom_granularity(run_duck) -> None:
    body = run_duck(
        {
            "measures": ["orders.count"],
            "timeDimensions": [{"dimension": "orders.created_at", "granularity": "fiscal_year"}],
        }
    )

    assert body["annotation"]["timeDimensions"] == {
        "orders.created_at.fiscal_year": {
            "title": "Orders Created at",
            "shortTitle": "Created at",
            "type": "time",
            "granularity": {"name": "fiscal_year", "title": "Fiscal Year", "interval": "1 year", "offset": "3 months"},
        },
        "orders.created_at": {"title": "Orders Created at", "shortTitle": "Created at", "type": "time"},
    }
    assert [row["orders.created_at.fiscal_year"] for row in body["data"]] == [
        "2023-04-01T00:00:00.000",
        "2024-04-01T00:00:00.000",
    ]


def test_sql_response_has_cubes_shape() -> None:
    plan = plan_queries(
        shop_model("postgres"),
        {
            "measures": ["orders.count"],
            "timeDimensions": [
                {"dimension": "orders.created_at", "granularity": "day", "dateRange": ["2024-01-01", "2024-01-02"]}
            ],
            "filters": [{"member": "orders.amount", "operator": "gt", "values": ["2.5"]}],
        },
        QueryContext(),
    )

    body = sql_response(plan)

    assert body["sql"]["sql"] == [
        "SELECT DATE_TRUNC('DAY', CAST(\"orders\".created_at AS TIMESTAMPTZ) AT TIME ZONE 'UTC') AS "
        '"orders__created_at_day", COUNT("orders".id) AS "orders__count" FROM orders AS "orders" '
        'WHERE ("orders".amount > $1) AND ("orders".created_at >= CAST($2 AS TIMESTAMPTZ) AND '
        '"orders".created_at <= CAST($3 AS TIMESTAMPTZ)) GROUP BY 1 ORDER BY 1 ASC LIMIT 10000',
        ["2.5", "2024-01-01T00:00:00.000Z", "2024-01-02T23:59:59.999Z"],
    ]
    assert body["sql"]["order"] == {"orders.created_at": "asc"}
    assert body["sql"]["timeDimensionAlias"] == "orders__created_at_day"
    assert body["sql"]["timeDimensionField"] == "orders.created_at"
    assert body["sql"]["aliasNameToMember"] == {
        "orders__created_at_day": "orders.created_at.day",
        "orders__count": "orders.count",
    }
    assert body["sql"]["dataSource"] == "default"
    assert plan.queries[0].params == (Decimal("2.5"), "2024-01-01T00:00:00.000Z", "2024-01-02T23:59:59.999Z")


def test_sql_response_of_a_compare_query_is_a_list() -> None:
    plan = plan_queries(
        shop_model("duckdb"),
        {
            "measures": ["orders.count"],
            "timeDimensions": [{"dimension": "orders.created_at", "compareDateRange": ["2024-01-01", "2024-02-01"]}],
        },
        QueryContext(),
    )

    body = sql_response(plan)

    assert isinstance(body, list)
    assert [item["sql"]["sql"][1] for item in body] == [
        ["2024-01-01T00:00:00.000Z", "2024-01-01T23:59:59.999Z"],
        ["2024-02-01T00:00:00.000Z", "2024-02-01T23:59:59.999Z"],
    ]


def test_dry_run_body() -> None:
    plan = plan_queries(
        shop_model("duckdb"),
        {"measures": ["orders.count", "line_items.count"], "dimensions": ["orders.status"]},
        QueryContext(),
    )

    body = dry_run_response(plan)

    assert body["queryType"] == "regularQuery"
    assert body["normalizedQueries"] == [plan.queries[0].query.to_json()]
    assert body["queryOrder"] == [{"orders.count": "desc"}]
    assert body["transformedQueries"][0]["hasMultipliedMeasures"] is True
    assert body["pivotQuery"]["queryType"] == "regularQuery"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "Query param is required"),
        ("undefined", "Query param is required"),
        ("{bad json", "Unable to decode query param as JSON, error: "),
    ],
)
def test_query_param_errors(value: Any, message: str) -> None:
    with pytest.raises(QueryError) as raised:
        parse_query_param(value)

    assert raised.value.message.startswith(message)


def test_a_plan_is_reused_from_the_per_model_cache() -> None:
    model = shop_model("duckdb")
    first = plan_queries(model, {"measures": ["orders.count"]}, QueryContext())
    second = plan_queries(model, '{"measures": ["orders.count"]}', QueryContext())

    assert second.queries[0] is first.queries[0]


def test_numbers_from_postgres_numeric_keep_their_digits(pg) -> None:
    body = run_query(
        pg, {"measures": ["orders.average_amount"], "dimensions": ["orders.status"], "order": {"orders.status": "asc"}}
    )

    assert body["data"][0] == {"orders.status": "cancelled", "orders.average_amount": "10.0000000000000000"}


def test_refresh_interval_is_the_shortest_refresh_key_of_the_cubes_read(tmp_path) -> None:
    from embedadmin.semantic import load_model, refresh_interval

    (tmp_path / "m.yml").write_text(
        "cubes:\n"
        "  - name: a\n    sql_table: a\n    refresh_key:\n      every: 1 hour\n"
        "    joins:\n      - name: b\n        sql: '{CUBE}.id = {b.id}'\n        relationship: one_to_one\n"
        "    dimensions:\n      - name: id\n        sql: id\n        type: number\n        primary_key: true\n"
        "      - name: y\n        sql: y\n        type: string\n"
        "  - name: b\n    sql_table: b\n    refresh_key:\n      every: 5 minutes\n"
        "    dimensions:\n      - name: id\n        sql: id\n        type: number\n        primary_key: true\n"
        "      - name: x\n        sql: x\n        type: string\n"
        "  - name: c\n    sql_table: c\n    dimensions:\n      - name: x\n        sql: x\n        type: string\n"
    )
    model = load_model(tmp_path, dialect="duckdb", check_interval=0).require()

    def interval(query: dict[str, Any]) -> float:
        return refresh_interval(model, plan_queries(model, query, QueryContext()).queries[0])

    assert interval({"dimensions": ["a.y"]}) == 3600
    assert interval({"dimensions": ["a.y", "b.x"]}) == 300
    assert interval({"dimensions": ["c.x"]}) == 10
