"""Generated SQL against hand-written SQL on the same data, on DuckDB and on PostgreSQL."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pytest

from embedadmin.semantic import QueryContext
from tests.semantic.conftest import run_query
from tests.semantic.databases import Executor


def canonical(value: Any) -> Any:
    """Compare numbers by value and times by their Cube text, whatever the driver returned."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float | Decimal):
        return Decimal(str(value)).normalize()
    if isinstance(value, datetime):
        return f"{value:%Y-%m-%dT%H:%M:%S}.{value.microsecond // 1000:03d}"
    if isinstance(value, date):
        return f"{value.isoformat()}T00:00:00.000"
    if isinstance(value, str):
        try:
            return Decimal(value).normalize()
        except ArithmeticError:
            return value
    return value


def engine_rows(body: dict[str, Any], keys: list[str]) -> list[tuple[Any, ...]]:
    return [tuple(canonical(row[key]) for key in keys) for row in body["data"]]


ADMIN = QueryContext(groups=["admin"])

CASES: list[tuple[str, dict[str, Any], list[str], str]] = [
    (
        "count and sum by status",
        {
            "measures": ["orders.count", "orders.revenue"],
            "dimensions": ["orders.status"],
            "order": {"orders.status": "asc"},
        },
        ["orders.status", "orders.count", "orders.revenue"],
        "SELECT status, count(*), sum(amount) FROM orders GROUP BY status ORDER BY status",
    ),
    (
        "fan-out: order measures through line items, grouped by user country",
        {
            "measures": ["orders.count", "orders.revenue", "orders.average_amount", "line_items.quantity"],
            "dimensions": ["users.country"],
            "order": [["users.country", "asc"]],
        },
        ["users.country", "orders.count", "orders.revenue", "orders.average_amount", "line_items.quantity"],
        """
        SELECT u.country, count(*), sum(o.amount), avg(o.amount),
               sum((SELECT sum(li.quantity) FROM line_items li WHERE li.order_id = o.id))
        FROM orders o LEFT JOIN users u ON o.user_id = u.id
        GROUP BY u.country ORDER BY u.country NULLS LAST
        """,
    ),
    (
        "fan-out without dimensions",
        {"measures": ["orders.revenue", "orders.count", "line_items.count", "orders.max_amount"]},
        ["orders.revenue", "orders.count", "line_items.count", "orders.max_amount"],
        "SELECT (SELECT sum(amount) FROM orders), (SELECT count(*) FROM orders), (SELECT count(*) FROM line_items),"
        " (SELECT max(amount) FROM orders)",
    ),
    (
        "view members with prefix, from two cubes",
        {
            "measures": ["orders_view.count", "orders_view.revenue"],
            "dimensions": ["orders_view.users_city"],
            "order": {"orders_view.users_city": "asc"},
        },
        ["orders_view.users_city", "orders_view.count", "orders_view.revenue"],
        """
        SELECT u.city, count(*), sum(o.amount) FROM orders o LEFT JOIN users u ON o.user_id = u.id
        GROUP BY u.city ORDER BY u.city NULLS LAST
        """,
    ),
    (
        "segment, filter and measure filter",
        {
            "measures": ["orders.revenue"],
            "dimensions": ["orders.user_country"],
            "segments": ["orders.finished"],
            "filters": [
                {"member": "orders.amount", "operator": "gte", "values": ["40"]},
                {"member": "orders.revenue", "operator": "gt", "values": [50]},
            ],
            "order": {"orders.user_country": "asc"},
        },
        ["orders.user_country", "orders.revenue"],
        """
        SELECT u.country, sum(o.amount) FROM orders o LEFT JOIN users u ON o.user_id = u.id
        WHERE o.status IN ('completed', 'shipped') AND o.amount >= 40
        GROUP BY u.country HAVING sum(o.amount) > 50 ORDER BY u.country NULLS LAST
        """,
    ),
    (
        "number measure over filtered counts, and count_distinct",
        {"measures": ["orders.completed_share", "orders.customers", "orders.completed_count"]},
        ["orders.completed_share", "orders.customers", "orders.completed_count"],
        """
        SELECT 1.0 * count(CASE WHEN status = 'completed' THEN 1 END) / count(*), count(DISTINCT user_id),
               count(CASE WHEN status = 'completed' THEN 1 END) FROM orders
        """,
    ),
    (
        "cube defined by SQL, reached through line items",
        {
            "measures": ["line_items.total", "line_items.count"],
            "dimensions": ["products.category"],
            "order": {"products.category": "asc"},
        },
        ["products.category", "line_items.total", "line_items.count"],
        """
        SELECT p.category, sum(li.quantity * li.price), count(*) FROM line_items li
        LEFT JOIN products p ON li.product_id = p.id GROUP BY p.category ORDER BY p.category
        """,
    ),
    (
        "case dimension",
        {"measures": ["users.count"], "dimensions": ["users.tier"], "order": {"users.tier": "asc"}},
        ["users.tier", "users.count"],
        """
        SELECT CASE WHEN lifetime_value >= 1000 THEN 'gold' WHEN lifetime_value >= 100 THEN 'silver' ELSE 'bronze' END
               AS tier, count(*)
        FROM users GROUP BY 1 ORDER BY 1
        """,
    ),
    (
        "nested and/or filters",
        {
            "measures": ["orders.count"],
            "filters": [
                {
                    "or": [
                        {"member": "orders.status", "operator": "equals", "values": ["shipped"]},
                        {
                            "and": [
                                {"member": "orders.amount", "operator": "lt", "values": ["50"]},
                                {"member": "orders.status", "operator": "notEquals", "values": ["cancelled"]},
                            ]
                        },
                    ]
                }
            ],
        },
        ["orders.count"],
        "SELECT count(*) FROM orders WHERE status = 'shipped' OR (amount < 50 AND status <> 'cancelled')",
    ),
    (
        "limit and offset with order",
        {
            "dimensions": ["orders.status"],
            "measures": ["orders.max_amount"],
            "order": [["orders.max_amount", "desc"]],
            "limit": 2,
            "offset": 1,
        },
        ["orders.status", "orders.max_amount"],
        "SELECT status, max(amount) FROM orders GROUP BY status ORDER BY 2 DESC LIMIT 2 OFFSET 1",
    ),
    (
        "ungrouped rows",
        {
            "dimensions": ["orders.status", "orders.amount"],
            "measures": ["orders.count", "orders.revenue"],
            "ungrouped": True,
            "order": {"orders.amount": "desc"},
            "limit": 3,
        },
        ["orders.status", "orders.amount", "orders.count", "orders.revenue"],
        "SELECT status, amount, 1, amount FROM orders ORDER BY amount DESC LIMIT 3",
    ),
    (
        "sub_query dimension: a measure of another cube per order",
        {
            "measures": ["orders.count"],
            "dimensions": ["orders.items_total"],
            "order": {"orders.items_total": "asc"},
        },
        ["orders.items_total", "orders.count"],
        """
        SELECT t, count(*) FROM (
            SELECT o.id, (SELECT sum(li.quantity * li.price) FROM line_items li WHERE li.order_id = o.id) AS t
            FROM orders o
        ) per_order GROUP BY t ORDER BY t NULLS LAST
        """,
    ),
    (
        "dimension built on a sub_query dimension, with fan-out measures and a sub_query filter",
        {
            "measures": ["orders.revenue", "line_items.quantity"],
            "dimensions": ["orders.big_basket"],
            "filters": [{"member": "orders.items_total", "operator": "set"}],
            "order": {"orders.big_basket": "asc"},
        },
        ["orders.big_basket", "orders.revenue", "line_items.quantity"],
        """
        SELECT big, sum(amount), sum(quantity) FROM (
            SELECT o.amount,
                   (SELECT sum(li.quantity * li.price) FROM line_items li WHERE li.order_id = o.id) >= 100 AS big,
                   (SELECT sum(li.quantity) FROM line_items li WHERE li.order_id = o.id) AS quantity
            FROM orders o WHERE EXISTS (SELECT 1 FROM line_items li WHERE li.order_id = o.id)
        ) per_order GROUP BY big ORDER BY big
        """,
    ),
    (
        "month buckets in Europe/Berlin",
        {
            "measures": ["orders.count", "orders.revenue"],
            "timeDimensions": [{"dimension": "orders.created_at", "granularity": "month", "dateRange": "this year"}],
            "timezone": "Europe/Berlin",
        },
        ["orders.created_at.month", "orders.count", "orders.revenue"],
        """
        SELECT date_trunc('month', (created_at AT TIME ZONE 'UTC') AT TIME ZONE 'Europe/Berlin') AS m, count(*),
               sum(amount)
        FROM orders
        WHERE created_at >= TIMESTAMP '2023-12-31 23:00:00' AND created_at <= TIMESTAMP '2024-12-31 22:59:59.999'
        GROUP BY 1 ORDER BY 1
        """,
    ),
]


@pytest.mark.parametrize(("name", "query", "keys", "sql"), CASES, ids=[c[0] for c in CASES])
def test_generated_sql_matches_hand_written_sql(
    executor: Executor, name: str, query: dict[str, Any], keys: list[str], sql: str
) -> None:
    body = run_query(executor, query, ADMIN)  # the view's policy lets admins read every row
    _, expected = executor.run(sql)
    assert engine_rows(body, keys) == [tuple(canonical(v) for v in row) for row in expected], name


def test_total_counts_rows_without_limit(executor: Executor) -> None:
    body = run_query(
        executor, {"measures": ["orders.count"], "dimensions": ["orders.status"], "limit": 1, "total": True}
    )
    _, expected = executor.run("SELECT count(DISTINCT status) FROM orders")
    assert len(body["data"]) == 1
    assert body["total"] == expected[0][0] == 4


ROLLING = [
    (
        "trailing 7 days, unbounded running count and a plain measure, by month",
        {
            "measures": ["orders.revenue_7d", "orders.running_count", "orders.revenue"],
            "timeDimensions": [
                {"dimension": "orders.created_at", "granularity": "month", "dateRange": ["2024-01-01", "2024-06-30"]}
            ],
        },
        ["orders.created_at.month", "orders.revenue_7d", "orders.running_count", "orders.revenue"],
        """
        SELECT s.d,
               (SELECT sum(amount) FROM orders WHERE created_at > s.d + INTERVAL '1 month' - INTERVAL '7 day'
                  AND created_at < s.d + INTERVAL '1 month'),
               (SELECT count(*) FROM orders WHERE created_at < s.d + INTERVAL '1 month'),
               (SELECT sum(amount) FROM orders WHERE created_at >= s.d
                  AND created_at < s.d + INTERVAL '1 month')
        FROM generate_series(TIMESTAMP '2024-01-01', TIMESTAMP '2024-06-01', INTERVAL '1 month') AS s(d)
        ORDER BY 1
        """,
    ),
    (
        "year to date by quarter and status",
        {
            "measures": ["orders.revenue_ytd"],
            "dimensions": ["orders.status"],
            "timeDimensions": [
                {"dimension": "orders.created_at", "granularity": "quarter", "dateRange": ["2024-01-01", "2024-12-31"]}
            ],
            "order": [["orders.created_at", "asc"], ["orders.status", "asc"]],
        },
        ["orders.status", "orders.created_at.quarter", "orders.revenue_ytd"],
        """
        SELECT o.status, s.d, sum(o.amount)
        FROM generate_series(TIMESTAMP '2024-01-01', TIMESTAMP '2024-10-01', INTERVAL '3 month') AS s(d)
        JOIN orders o ON o.created_at >= TIMESTAMP '2024-01-01' AND o.created_at < s.d + INTERVAL '3 month'
        GROUP BY 1, 2 ORDER BY 2, 1
        """,
    ),
    (
        "window around the bucket start: the month before and the month itself",
        {
            "measures": ["orders.next_month_revenue"],
            "timeDimensions": [
                {"dimension": "orders.created_at", "granularity": "month", "dateRange": ["2024-02-01", "2024-04-30"]}
            ],
        },
        ["orders.created_at.month", "orders.next_month_revenue"],
        """
        SELECT s.d,
               (SELECT sum(amount) FROM orders WHERE created_at >= s.d - INTERVAL '1 month'
                  AND created_at < s.d + INTERVAL '1 month')
        FROM generate_series(TIMESTAMP '2024-02-01', TIMESTAMP '2024-04-01', INTERVAL '1 month') AS s(d) ORDER BY 1
        """,
    ),
]


@pytest.mark.parametrize(("name", "query", "keys", "sql"), ROLLING, ids=[c[0] for c in ROLLING])
def test_rolling_windows_match_hand_written_sql(
    executor: Executor, name: str, query: dict[str, Any], keys: list[str], sql: str
) -> None:
    body = run_query(executor, query)
    _, expected = executor.run(sql)
    assert engine_rows(body, keys) == [tuple(canonical(v) for v in row) for row in expected], name


def test_rolling_windows_need_a_granularity_and_a_date_range() -> None:
    from embedadmin.semantic import QueryError, plan_queries
    from tests.semantic.conftest import shop_model

    with pytest.raises(QueryError, match="need a time dimension with a granularity and a dateRange"):
        plan_queries(shop_model("duckdb"), {"measures": ["orders.revenue_7d"]}, QueryContext())
