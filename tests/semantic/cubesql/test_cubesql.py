"""Semantic SQL results against hand-written SQL on the same shop data, on DuckDB and PostgreSQL."""

from __future__ import annotations

import pytest

from tests.semantic.cubesql_support import data, direct, numeric
from tests.semantic.databases import Executor

# (semantic SQL, the SQL it means on the raw tables); both sorted so the rows compare one to one.
EQUIVALENT = {
    "measure by dimension": (
        "SELECT status, MEASURE(count) FROM orders GROUP BY 1 ORDER BY 1",
        "SELECT status, count(*) FROM orders GROUP BY 1 ORDER BY 1",
    ),
    "aggregate functions matching the measure types": (
        "SELECT status, SUM(revenue) AS r, AVG(average_amount), MAX(max_amount), COUNT(DISTINCT customers), "
        "COUNT(count) FROM orders GROUP BY status ORDER BY r DESC",
        "SELECT status, sum(amount) AS r, avg(amount), max(amount), count(DISTINCT user_id), count(*) "
        "FROM orders GROUP BY status ORDER BY r DESC",
    ),
    "measures without GROUP BY: one total row": (
        "SELECT COUNT(*), MEASURE(revenue), MIN(min_created) FROM orders",
        "SELECT count(*), sum(amount), min(created_at) FROM orders",
    ),
    "qualified names and a table alias": (
        "SELECT o.status AS s, MEASURE(o.count) AS n FROM orders AS o GROUP BY s ORDER BY n DESC, s",
        "SELECT status AS s, count(*) AS n FROM orders GROUP BY s ORDER BY n DESC, s",
    ),
    "DATE_TRUNC on a time dimension": (
        "SELECT DATE_TRUNC('quarter', created_at) AS q, COUNT(*) FROM orders GROUP BY 1 ORDER BY 1",
        "SELECT date_trunc('quarter', created_at), count(*) FROM orders GROUP BY 1 ORDER BY 1",
    ),
    "numeric comparisons": (
        "SELECT MEASURE(count) FROM orders WHERE amount > 40 AND amount <= 100",
        "SELECT count(*) FROM orders WHERE amount > 40 AND amount <= 100",
    ),
    "a value on the left": (
        "SELECT MEASURE(count) FROM orders WHERE 40 < amount AND 100 >= amount",
        "SELECT count(*) FROM orders WHERE amount > 40 AND amount <= 100",
    ),
    "<> leaves NULL rows out, as SQL does": (
        "SELECT name FROM users WHERE country <> 'DE' ORDER BY name",
        "SELECT name FROM users WHERE country <> 'DE' ORDER BY name",
    ),
    "!= and NOT (=)": (
        "SELECT name FROM users WHERE NOT (country = 'DE') AND city != 'Paris' ORDER BY name",
        "SELECT name FROM users WHERE NOT (country = 'DE') AND city <> 'Paris' ORDER BY name",
    ),
    "IN and NOT IN": (
        "SELECT name FROM users WHERE country IN ('DE', 'FR') AND name NOT IN ('Bob') ORDER BY name",
        "SELECT name FROM users WHERE country IN ('DE', 'FR') AND name NOT IN ('Bob') ORDER BY name",
    ),
    "NOT IN leaves NULL rows out": (
        "SELECT name FROM users WHERE country NOT IN ('DE', 'FR') ORDER BY name",
        "SELECT name FROM users WHERE country NOT IN ('DE', 'FR') ORDER BY name",
    ),
    "IS NULL and IS NOT NULL": (
        "SELECT name FROM users WHERE country IS NULL OR city IS NOT NULL AND name = 'Ada' ORDER BY name",
        "SELECT name FROM users WHERE country IS NULL OR city IS NOT NULL AND name = 'Ada' ORDER BY name",
    ),
    "NOT over OR (De Morgan)": (
        "SELECT name FROM users WHERE NOT (country = 'DE' OR city = 'Paris') ORDER BY name",
        "SELECT name FROM users WHERE NOT (country = 'DE' OR city = 'Paris') ORDER BY name",
    ),
    "nested AND / OR": (
        "SELECT name FROM users WHERE (country = 'DE' AND city = 'Berlin') OR (country = 'US' OR name = 'Cleo') "
        "ORDER BY name",
        "SELECT name FROM users WHERE (country = 'DE' AND city = 'Berlin') OR (country = 'US' OR name = 'Cleo') "
        "ORDER BY name",
    ),
    "ILIKE patterns": (
        "SELECT name FROM products WHERE name ILIKE 'wid%' OR name ILIKE '%OK' OR name ILIKE '%adg%' ORDER BY name",
        "SELECT name FROM products WHERE name ILIKE 'wid%' OR name ILIKE '%OK' OR name ILIKE '%adg%' ORDER BY name",
    ),
    "NOT ILIKE": (
        "SELECT name FROM users WHERE city NOT ILIKE '%o%' ORDER BY name",
        "SELECT name FROM users WHERE city NOT ILIKE '%o%' ORDER BY name",
    ),
    "escaped % in a pattern": (
        "SELECT name FROM products WHERE name ILIKE '%50\\% off'",
        "SELECT name FROM products WHERE name ILIKE '%50\\% off' ESCAPE '\\'",
    ),
    "LIKE without wildcards is equality, NOT LIKE leaves NULL rows out": (
        "SELECT name FROM users WHERE name LIKE 'Ada' OR city NOT LIKE 'Munich' ORDER BY name",
        "SELECT name FROM users WHERE name = 'Ada' OR city <> 'Munich' ORDER BY name",
    ),
    "LIKE patterns without letters": (
        "SELECT name FROM products WHERE name LIKE '%50%'",
        "SELECT name FROM products WHERE name LIKE '%50%'",
    ),
    "BETWEEN and NOT BETWEEN": (
        "SELECT amount FROM orders WHERE amount BETWEEN 20 AND 75 OR amount NOT BETWEEN 5 AND 250 ORDER BY 1",
        "SELECT amount FROM orders WHERE amount BETWEEN 20 AND 75 OR amount NOT BETWEEN 5 AND 250 ORDER BY 1",
    ),
    "dates compare as timestamps (BETWEEN ends at midnight)": (
        "SELECT created_at FROM orders WHERE created_at BETWEEN '2024-01-01' AND '2024-01-31' ORDER BY 1",
        "SELECT created_at FROM orders WHERE created_at BETWEEN '2024-01-01' AND '2024-01-31' ORDER BY 1",
    ),
    "date ranges with typed literals": (
        "SELECT MEASURE(count) FROM orders WHERE created_at >= DATE '2024-03-01' "
        "AND created_at < CAST('2024-07-01' AS TIMESTAMP)",
        "SELECT count(*) FROM orders WHERE created_at >= '2024-03-01' AND created_at < '2024-07-01'",
    ),
    "a timestamp equality": (
        "SELECT status FROM orders WHERE created_at = TIMESTAMP '2024-01-15 09:00:00'",
        "SELECT status FROM orders WHERE created_at = '2024-01-15 09:00:00'",
    ),
    "NOW() - INTERVAL (now is 2024-07-31 10:30 UTC)": (
        "SELECT MEASURE(count) FROM orders WHERE created_at >= NOW() - INTERVAL '60 days'",
        "SELECT count(*) FROM orders WHERE created_at >= '2024-06-01 10:30:00'",
    ),
    "CURRENT_DATE - INTERVAL": (
        "SELECT MEASURE(count) FROM orders WHERE created_at < CURRENT_DATE - INTERVAL '1 month'",
        "SELECT count(*) FROM orders WHERE created_at < '2024-06-30 00:00:00'",
    ),
    "a segment as a boolean column": (
        "SELECT MEASURE(revenue) FROM orders WHERE finished",
        "SELECT sum(amount) FROM orders WHERE status IN ('completed', 'shipped')",
    ),
    "segments with IS TRUE and = TRUE, with other conditions": (
        "SELECT MEASURE(count) FROM orders WHERE finished IS TRUE AND amount > 50 AND finished = TRUE",
        "SELECT count(*) FROM orders WHERE status IN ('completed', 'shipped') AND amount > 50",
    ),
    "HAVING on a measure": (
        "SELECT user_country, MEASURE(count) FROM orders GROUP BY 1 HAVING MEASURE(count) > 1 ORDER BY 1",
        "SELECT u.country, count(*) FROM orders o LEFT JOIN users u ON o.user_id = u.id GROUP BY 1 "
        "HAVING count(*) > 1 ORDER BY 1",
    ),
    "HAVING with an aggregate function and a grouped dimension": (
        "SELECT status, SUM(revenue) FROM orders GROUP BY status HAVING SUM(revenue) >= 20 AND status <> 'shipped' "
        "ORDER BY 1",
        "SELECT status, sum(amount) FROM orders GROUP BY status HAVING sum(amount) >= 20 AND status <> 'shipped' "
        "ORDER BY 1",
    ),
    "a view": (
        "SELECT users_city, MEASURE(count), MEASURE(revenue) FROM orders_view GROUP BY 1 ORDER BY 1",
        "SELECT u.city, count(*), sum(o.amount) FROM orders o LEFT JOIN users u ON o.user_id = u.id GROUP BY 1 "
        "ORDER BY 1",
    ),
    "no GROUP BY and no aggregate: ungrouped rows": (
        "SELECT status, amount FROM orders WHERE amount >= 60 ORDER BY amount DESC",
        "SELECT status, amount FROM orders WHERE amount >= 60 ORDER BY amount DESC",
    ),
    "LIMIT and OFFSET": (
        "SELECT amount FROM orders ORDER BY amount LIMIT 3 OFFSET 2",
        "SELECT amount FROM orders ORDER BY amount LIMIT 3 OFFSET 2",
    ),
    "DISTINCT": (
        "SELECT DISTINCT status FROM orders ORDER BY status",
        "SELECT DISTINCT status FROM orders ORDER BY status",
    ),
    "GROUP BY a column that is not selected": (
        "SELECT MEASURE(count) FROM orders GROUP BY status ORDER BY 1",
        "SELECT count(*) FROM orders GROUP BY status ORDER BY 1",
    ),
    "ORDER BY a measure that is not selected": (
        "SELECT status FROM orders GROUP BY 1 ORDER BY MEASURE(revenue) DESC",
        "SELECT status FROM orders GROUP BY 1 ORDER BY sum(amount) DESC",
    ),
    "ORDER BY an alias, a position and an expression": (
        "SELECT status AS s, DATE_TRUNC('year', created_at) AS y, MEASURE(count) AS c FROM orders "
        "GROUP BY s, y ORDER BY y DESC, 3 DESC, status",
        "SELECT status AS s, date_trunc('year', created_at) AS y, count(*) AS c FROM orders "
        "GROUP BY s, y ORDER BY y DESC, 3 DESC, s",
    ),
    "GROUP BY, HAVING and ORDER BY an alias that shadows a column; COUNT(1)": (
        "SELECT DATE_TRUNC('month', created_at) AS created_at, COUNT(1) AS n FROM orders "
        "GROUP BY created_at HAVING n > 1 ORDER BY created_at",
        "SELECT date_trunc('month', created_at) AS m, count(1) AS n FROM orders GROUP BY 1 HAVING count(1) > 1 "
        "ORDER BY 1",
    ),
    "ungrouped ORDER BY a column that is not selected": (
        "SELECT status FROM orders WHERE amount > 50 ORDER BY created_at",
        "SELECT status FROM orders WHERE amount > 50 ORDER BY created_at",
    ),
    "CROSS JOIN of cubes uses the model's join": (
        "SELECT u.country, MEASURE(o.revenue) FROM orders o CROSS JOIN users u GROUP BY 1 ORDER BY 1",
        "SELECT u.country, sum(o.amount) FROM orders o LEFT JOIN users u ON o.user_id = u.id GROUP BY 1 ORDER BY 1",
    ),
    "JOIN ON __cubeJoinField": (
        "SELECT users.city, COUNT(DISTINCT orders.customers) AS buyers FROM orders "
        "JOIN users ON orders.__cubeJoinField = users.__cubeJoinField WHERE users.country = 'DE' "
        "GROUP BY 1 ORDER BY 1",
        "SELECT u.city, count(DISTINCT o.user_id) FROM orders o JOIN users u ON o.user_id = u.id "
        "WHERE u.country = 'DE' GROUP BY 1 ORDER BY 1",
    ),
    "a fanned-out join keeps sums right": (
        "SELECT o.status, MEASURE(o.revenue), MEASURE(li.quantity) FROM orders o "
        "CROSS JOIN line_items li GROUP BY 1 ORDER BY 1",
        "SELECT status, sum(amount), (SELECT sum(quantity) FROM line_items li JOIN orders x ON li.order_id = x.id "
        "WHERE x.status = o.status) FROM orders o GROUP BY 1 ORDER BY 1",
    ),
    "unquoted names are case-insensitive": (
        "SELECT STATUS, measure(COUNT) FROM ORDERS GROUP BY STATUS ORDER BY STATUS",
        "SELECT status, count(*) FROM orders GROUP BY status ORDER BY status",
    ),
    "comments are ignored": (
        "SELECT /* the status */ status FROM orders -- all of them\nGROUP BY 1 ORDER BY 1",
        "SELECT status FROM orders GROUP BY 1 ORDER BY 1",
    ),
    "a quote inside a string literal is a value": (
        "SELECT MEASURE(count) FROM orders WHERE status = 'x'' OR ''1''=''1'",
        "SELECT count(*) FROM orders WHERE status = 'x'' OR ''1''=''1'",
    ),
}


@pytest.mark.parametrize(("semantic", "hand_written"), EQUIVALENT.values(), ids=EQUIVALENT.keys())
def test_semantic_sql_returns_what_the_hand_written_sql_returns(
    executor: Executor, semantic: str, hand_written: str
) -> None:
    expected = numeric(direct(executor, hand_written))

    rows = numeric(data(executor, semantic))

    assert rows == expected
    assert rows  # every case reads something


def test_custom_granularity_by_name(executor: Executor) -> None:
    rows = data(
        executor, "SELECT DATE_TRUNC('fiscal_year', created_at) AS fy, COUNT(*) FROM orders GROUP BY 1 ORDER BY 1"
    )

    assert rows == [["2023-04-01T00:00:00.000", "5"], ["2024-04-01T00:00:00.000", "5"]]


def test_time_zone_moves_rows_between_months(executor: Executor) -> None:
    sql = (
        "SELECT DATE_TRUNC('month', created_at), COUNT(*) FROM orders WHERE created_at < '2024-03-01' "
        "GROUP BY 1 ORDER BY 1"
    )

    utc = data(executor, sql)
    berlin = data(executor, sql, timezone="Europe/Berlin")

    assert utc == [["2024-01-01T00:00:00.000", "2"], ["2024-02-01T00:00:00.000", "1"]]
    assert berlin == [["2024-01-01T00:00:00.000", "1"], ["2024-02-01T00:00:00.000", "2"]]


def test_boolean_dimension_as_a_condition(executor: Executor) -> None:
    rows = data(
        executor,
        "SELECT big_basket, MEASURE(count) FROM orders WHERE big_basket OR NOT big_basket GROUP BY 1 ORDER BY 1",
    )

    assert rows == [[False, "5"], [True, "1"]]


def test_limit_above_the_row_limit_is_capped(executor: Executor) -> None:
    capped = data(executor, "SELECT amount FROM orders ORDER BY amount LIMIT 100", row_limit=2)
    default = data(executor, "SELECT amount FROM orders ORDER BY amount", row_limit=3)

    assert capped == [["5"], ["10"]]
    assert default == [["5"], ["10"], ["15"]]


def test_rolling_window_measures_take_their_date_range_from_where(executor: Executor) -> None:
    sql = (
        "SELECT DATE_TRUNC('month', created_at) AS m, MEASURE(running_count), MEASURE(revenue_7d), COUNT(*) "
        "FROM orders WHERE created_at >= '2024-01-01' AND created_at < '2024-04-01' AND status <> 'x' "
        "GROUP BY 1 ORDER BY 1"
    )

    rows = data(executor, sql)

    assert rows == [
        ["2024-01-01T00:00:00.000", "2", "50", "2"],
        ["2024-02-01T00:00:00.000", "3", None, "1"],
        ["2024-03-01T00:00:00.000", "5", "320", "2"],
    ]
