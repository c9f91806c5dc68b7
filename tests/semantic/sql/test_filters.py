"""Every filter operator, on DuckDB and PostgreSQL, and injection attempts through values, names and order."""

from __future__ import annotations

from typing import Any

import pytest

from embedadmin.semantic import QueryContext, QueryError, plan_queries
from tests.semantic.conftest import NOW, run_query, shop_model
from tests.semantic.databases import Executor


def order_ids(executor: Executor, filters: list[dict[str, Any]], timezone: str = "UTC") -> list[int]:
    body = run_query(
        executor,
        {
            "dimensions": ["orders.amount"],
            "measures": ["orders.count"],
            "filters": filters,
            "timezone": timezone,
            "ungrouped": True,
            "order": {"orders.amount": "asc"},
        },
    )
    amounts = [int(row["orders.amount"]) for row in body["data"]]
    by_amount = {100: 1, 50: 2, 75: 3, 20: 4, 300: 5, 10: 6, 60: 7, 5: 8, 40: 9, 15: 10}
    return sorted(by_amount[a] for a in amounts)


OPERATORS = [
    ("equals one", [{"member": "orders.status", "operator": "equals", "values": ["shipped"]}], [3, 8]),
    ("equals many", [{"member": "orders.status", "operator": "equals", "values": ["shipped", "cancelled"]}], [3, 6, 8]),
    ("equals null", [{"member": "orders.user_country", "operator": "equals", "values": [None]}], [8, 10]),
    (
        "equals value or null",
        [{"member": "orders.user_country", "operator": "equals", "values": ["US", None]}],
        [6, 7, 8, 10],
    ),
    (
        "notEquals keeps nulls",
        [{"member": "orders.user_country", "operator": "notEquals", "values": ["DE"]}],
        [4, 5, 6, 7, 8, 10],
    ),
    (
        "notEquals with null drops nulls",
        [{"member": "orders.user_country", "operator": "notEquals", "values": ["DE", None]}],
        [4, 5, 6, 7],
    ),
    ("in", [{"member": "orders.amount", "operator": "in", "values": ["5", 10, "300"]}], [5, 6, 8]),
    ("notIn", [{"member": "orders.status", "operator": "notIn", "values": ["completed", "shipped"]}], [4, 6]),
    ("contains, case-insensitive", [{"member": "orders.status", "operator": "contains", "values": ["PPED"]}], [3, 8]),
    (
        "contains any of several",
        [{"member": "orders.status", "operator": "contains", "values": ["cess", "cel"]}],
        [4, 6],
    ),
    (
        "notContains keeps nulls",
        [{"member": "orders.user_country", "operator": "notContains", "values": ["e"]}],
        [4, 5, 6, 7, 8, 10],
    ),
    ("startsWith", [{"member": "orders.status", "operator": "startsWith", "values": ["Comp"]}], [1, 2, 5, 7, 9, 10]),
    ("notStartsWith", [{"member": "orders.status", "operator": "notStartsWith", "values": ["c"]}], [3, 4, 8]),
    ("endsWith", [{"member": "orders.status", "operator": "endsWith", "values": ["ED"]}], [1, 2, 3, 5, 6, 7, 8, 9, 10]),
    ("notEndsWith", [{"member": "orders.status", "operator": "notEndsWith", "values": ["ed"]}], [4]),
    ("gt", [{"member": "orders.amount", "operator": "gt", "values": ["60"]}], [1, 3, 5]),
    ("gte", [{"member": "orders.amount", "operator": "gte", "values": [60]}], [1, 3, 5, 7]),
    ("lt", [{"member": "orders.amount", "operator": "lt", "values": ["15"]}], [6, 8]),
    ("lte decimal", [{"member": "orders.amount", "operator": "lte", "values": ["15.0"]}], [6, 8, 10]),
    ("set", [{"member": "orders.user_country", "operator": "set"}], [1, 2, 3, 4, 5, 6, 7, 9]),
    ("notSet", [{"member": "orders.user_country", "operator": "notSet"}], [8, 10]),
    (
        "inDateRange",
        [{"member": "orders.created_at", "operator": "inDateRange", "values": ["2024-01-31", "2024-03-30"]}],
        [2, 3, 4],
    ),
    (
        "notInDateRange",
        [{"member": "orders.created_at", "operator": "notInDateRange", "values": ["2024-01-01", "2024-10-26"]}],
        [7, 8],
    ),
    ("onTheDate", [{"member": "orders.created_at", "operator": "onTheDate", "values": ["2024-03-31"]}], [5]),
    (
        "beforeDate",
        [{"member": "orders.created_at", "operator": "beforeDate", "values": ["2024-01-31T23:30:00"]}],
        [1],
    ),
    (
        "beforeOrOnDate",
        [{"member": "orders.created_at", "operator": "beforeOrOnDate", "values": ["2024-01-31"]}],
        [1, 2],
    ),
    ("afterDate", [{"member": "orders.created_at", "operator": "afterDate", "values": ["2024-10-27"]}], [8]),
    (
        "afterOrOnDate",
        [{"member": "orders.created_at", "operator": "afterOrOnDate", "values": ["2024-10-27"]}],
        [7, 8],
    ),
    (
        "relative range in a filter value",
        [{"member": "orders.created_at", "operator": "inDateRange", "values": ["last 2 months"]}],
        [9, 10],
    ),
    (
        "measureFilter applies the measure's own filters",
        [{"member": "orders.completed_count", "operator": "measureFilter"}],
        [1, 2, 5, 7, 9, 10],
    ),
    (
        "or of and",
        [
            {
                "or": [
                    {"member": "orders.amount", "operator": "gt", "values": ["99"]},
                    {
                        "and": [
                            {"member": "orders.status", "operator": "equals", "values": ["shipped"]},
                            {"member": "orders.user_country", "operator": "set"},
                        ]
                    },
                ]
            }
        ],
        [1, 3, 5],
    ),
    ("legacy dimension key", [{"dimension": "orders.status", "operator": "equals", "values": ["processing"]}], [4]),
]


@pytest.mark.parametrize(("name", "filters", "expected"), OPERATORS, ids=[o[0] for o in OPERATORS])
def test_filter_operators(executor: Executor, name: str, filters: list[dict[str, Any]], expected: list[int]) -> None:
    assert order_ids(executor, filters) == expected, name


def test_date_filters_use_the_query_time_zone(executor: Executor) -> None:
    # Order 2 is 2024-01-31 23:30 UTC, which is February 1st in Berlin.
    in_january = [{"member": "orders.created_at", "operator": "inDateRange", "values": ["2024-01-01", "2024-01-31"]}]

    assert order_ids(executor, in_january) == [1, 2]
    assert order_ids(executor, in_january, timezone="Europe/Berlin") == [1]


def test_measure_filters_go_to_having(executor: Executor) -> None:
    body = run_query(
        executor,
        {
            "measures": ["orders.revenue"],
            "dimensions": ["orders.status"],
            "filters": [{"member": "orders.revenue", "operator": "gte", "values": ["75"]}],
            "order": {"orders.revenue": "asc"},
        },
    )

    assert body["data"] == [
        {"orders.status": "shipped", "orders.revenue": "80"},
        {"orders.status": "completed", "orders.revenue": "565"},
    ]


LIKE_LITERALS = [
    ("percent sign is literal", "50%", ["Lamp 50% off"]),
    ("underscore is literal", "_", []),
    ("backslash is literal", "\\", []),
]


@pytest.mark.parametrize(("name", "value", "expected"), LIKE_LITERALS, ids=[c[0] for c in LIKE_LITERALS])
def test_like_wildcards_in_values_match_literally(
    executor: Executor, name: str, value: str, expected: list[str]
) -> None:
    body = run_query(
        executor,
        {
            "dimensions": ["products.name"],
            "filters": [{"member": "products.name", "operator": "contains", "values": [value]}],
        },
    )

    assert [row["products.name"] for row in body["data"]] == expected, name


INJECTIONS = [
    "x' OR '1'='1",
    "x'; DROP TABLE orders; --",
    "x\\'; DROP TABLE orders; --",
    "') OR 1=1 --",
    '" OR ""="',
    "completed' UNION SELECT 1 --",
    "$1",
    "%(x)s",
]


@pytest.mark.parametrize("value", INJECTIONS)
def test_injection_through_filter_values_is_inert(executor: Executor, value: str) -> None:
    for operator in ("equals", "contains", "startsWith", "notEquals", "gt"):
        body = run_query(
            executor,
            {
                "measures": ["orders.count"],
                "filters": [{"member": "orders.status", "operator": operator, "values": [value]}],
            },
        )
        count = int(body["data"][0]["orders.count"])
        assert count == (
            10 if operator == "notEquals" else sum(s > value for s in _STATUSES) if operator == "gt" else 0
        )
    _, rows = executor.run("SELECT count(*) FROM orders")
    assert rows[0][0] == 10  # the table is still there


_STATUSES = [
    "completed",
    "completed",
    "shipped",
    "processing",
    "completed",
    "cancelled",
    "completed",
    "shipped",
    "completed",
    "completed",
]


@pytest.mark.parametrize(
    "query",
    [
        {"measures": ["orders.count; DROP TABLE orders"]},
        {"measures": ["orders.count"], "dimensions": ['orders."status"']},
        {"measures": ["orders.count"], "dimensions": ["orders.status--"]},
        {"measures": ["orders.count"], "segments": ["orders.finished OR 1=1"]},
        {"measures": ["orders.count"], "filters": [{"member": "orders.status) OR (1=1", "operator": "set"}]},
        {"measures": ["orders.count"], "order": {"orders.count; DROP TABLE orders": "asc"}},
        {"measures": ["orders.count"], "order": {"orders.count": "asc; DROP TABLE orders"}},
        {"measures": ["orders.count"], "timeDimensions": [{"dimension": "orders.created_at", "granularity": "day')"}]},
        {"measures": ["orders.count"], "timezone": "UTC'; DROP TABLE orders; --"},
        {"measures": ["orders.count"], "limit": "1; DROP TABLE orders"},
        {
            "measures": ["orders.count"],
            "filters": [{"member": "orders.status", "operator": "equals OR 1=1", "values": ["x"]}],
        },
    ],
)
def test_injection_through_names_order_and_options_is_rejected(query: dict[str, Any]) -> None:
    with pytest.raises(QueryError):
        plan_queries(shop_model("duckdb"), query, QueryContext(), now=NOW)


@pytest.mark.parametrize("key", ["1", "orders", "orders__count_x"])
def test_order_by_a_bare_alias_that_names_no_column_does_not_reach_sql(key: str) -> None:
    plan = plan_queries(shop_model("duckdb"), {"measures": ["orders.count"], "order": [[key, "desc"]]}, QueryContext())

    assert "ORDER BY" not in plan.queries[0].sql


def test_order_by_a_column_alias() -> None:
    plan = plan_queries(
        shop_model("duckdb"),
        {"measures": ["orders.count"], "dimensions": ["orders.status"], "order": [["orders__count", "asc"]]},
        QueryContext(),
    )

    assert plan.queries[0].sql.endswith("GROUP BY 1 ORDER BY 2 ASC LIMIT 10000")


def test_hundreds_of_filters_compile_and_combine_correctly(executor: Executor) -> None:
    # given: 400 top-level filters (each true for every order) plus one OR group that selects two orders
    always = [{"member": "orders.amount", "operator": "gte", "values": ["0"]}] * 400
    either = {
        "or": [
            {"member": "orders.status", "operator": "equals", "values": ["shipped"]},
            {"member": "orders.status", "operator": "equals", "values": ["cancelled"]},
        ]
    }
    # then: the query still compiles (no recursion limit) and the OR keeps its parentheses under the ANDs
    assert order_ids(executor, [*always, either]) == [3, 6, 8]
