"""Semantic SQL that the SQL API refuses: every error path, with its exact message, and injection attempts
that are rejected or stay inert (values bound as parameters; no table or function outside the model)."""

from __future__ import annotations

import pytest

from embedadmin.semantic import QueryError
from embedadmin.semantic.cubesql.plan import cubesql_plan
from tests.semantic.conftest import NOW, shop_model
from tests.semantic.cubesql_support import ADMIN, data
from tests.semantic.databases import Executor

_JOINS = (
    "Joins are supported as CROSS JOIN or JOIN ... ON a.__cubeJoinField = b.__cubeJoinField (the model's joins "
    "are used); a view is the recommended way to query several cubes"
)
_FUNCTIONS = (
    "the SQL API takes columns, MEASURE(), SUM/COUNT/AVG/MIN/MAX over measures and DATE_TRUNC over time dimensions"
)
_SEGMENT = "Segment 'orders.finished' can only be used as WHERE finished (or finished IS TRUE), combined with AND"
_NULL = "Comparing 'orders.status' with NULL never matches: use IS NULL or IS NOT NULL"
_MISMATCH = "Measure aggregation type doesn't match. The aggregation type for '{}' is '{}()' but '{}()' was provided"

ERRORS = {
    # statements
    "empty": ("", "Invalid query format: the SQL query is empty"),
    "only a semicolon": ("  ;  ", "Invalid query format: the SQL query is empty"),
    "parse error": ("SELECT FROM WHERE", "SQL parse error: Expected table name (line 1, column 17)"),
    "unclosed string": ("SELECT status FROM orders WHERE status = 'x", None),
    "two statements": ("SELECT status FROM orders; SELECT status FROM users", "Only one SQL statement is allowed"),
    "DROP": ("DROP TABLE orders", "Only SELECT statements are supported, got DROP"),
    "INSERT": ("INSERT INTO orders VALUES (1)", "Only SELECT statements are supported, got INSERT"),
    "UPDATE": ("UPDATE orders SET status = 'x'", "Only SELECT statements are supported, got UPDATE"),
    "DELETE": ("DELETE FROM orders", "Only SELECT statements are supported, got DELETE"),
    "CREATE": ("CREATE TABLE x AS SELECT 1", "Only SELECT statements are supported, got CREATE"),
    "COPY": ("COPY (SELECT 1) TO '/tmp/x'", "Only SELECT statements are supported, got COPY"),
    "SET": ("SET search_path = x", "Only SELECT statements are supported, got SET"),
    "LOAD": ("LOAD httpfs", "Only SELECT statements are supported, got LOAD"),
    "PRAGMA": ("PRAGMA version", "Only SELECT statements are supported, got PRAGMA"),
    "UNION": (
        "SELECT status FROM orders UNION SELECT status FROM orders",
        "Only SELECT statements are supported, got UNION",
    ),
    "WITH": ("WITH t AS (SELECT status FROM orders) SELECT status FROM t", "Unsupported clause in the SQL API: WITH"),
    "FOR UPDATE": ("SELECT status FROM orders FOR UPDATE", "Unsupported clause in the SQL API: LOCKS"),
    "SELECT INTO": ("SELECT status INTO t FROM orders", "Unsupported clause in the SQL API: INTO"),
    "DISTINCT ON": ("SELECT DISTINCT ON (status) status FROM orders", "Unsupported clause in the SQL API: DISTINCT ON"),
    # FROM and JOIN
    "no FROM": ("SELECT 1", "FROM a cube or view is required"),
    "a file function": (
        "SELECT * FROM read_csv('/etc/passwd')",
        "Only cubes and views can be queried: FROM <cube or view> [AS alias], got READ_CSV('/etc/passwd')",
    ),
    "a network function": (
        "SELECT * FROM read_parquet('s3://bucket/x.parquet')",
        "Only cubes and views can be queried: FROM <cube or view> [AS alias], got READ_PARQUET('s3://bucket/x.parquet')",
    ),
    "a file path as a table": (
        "SELECT * FROM '/etc/passwd'",
        "Table '/etc/passwd' not found: only cubes and views can be queried",
    ),
    "pg_read_file as a table": (
        "SELECT * FROM pg_read_file('/etc/passwd')",
        "Only cubes and views can be queried: FROM <cube or view> [AS alias], got PG_READ_FILE('/etc/passwd')",
    ),
    "a subquery against a real table": (
        "SELECT usename FROM (SELECT usename FROM pg_user) t",
        "Table 'pg_user' not found: only cubes and views can be queried",
    ),
    "a schema-qualified table": (
        "SELECT status FROM public.orders",
        "Only cubes and views can be queried: FROM <cube or view> [AS alias], got public.orders",
    ),
    "a table alias with columns": (
        "SELECT status FROM orders AS o(a, b)",
        "Only cubes and views can be queried: FROM <cube or view> [AS alias], got orders AS o(a, b)",
    ),
    "an unknown table": (
        "SELECT status FROM secrets",
        "Table 'secrets' not found: only cubes and views can be queried",
    ),
    "an alias twice": ("SELECT status FROM orders o CROSS JOIN users o", "Table name 'o' specified more than once"),
    "RIGHT JOIN": (
        "SELECT status FROM orders RIGHT JOIN users ON orders.__cubeJoinField = users.__cubeJoinField",
        _JOINS,
    ),
    "FULL JOIN": (
        "SELECT status FROM orders FULL JOIN users ON orders.__cubeJoinField = users.__cubeJoinField",
        _JOINS,
    ),
    "JOIN USING": ("SELECT status FROM orders JOIN users USING (id)", _JOINS),
    "JOIN ON columns": ("SELECT status FROM orders JOIN users ON orders.user_id = users.id", _JOINS),
    "JOIN ON the same table twice": (
        "SELECT status FROM orders JOIN users ON orders.__cubeJoinField = orders.__cubeJoinField",
        _JOINS,
    ),
    "NATURAL JOIN": ("SELECT status FROM orders NATURAL JOIN users", _JOINS),
    "a view joined": (
        "SELECT status FROM orders_view CROSS JOIN users",
        "Views can't be joined with other tables: query one view that has all the members",
    ),
    # columns
    "an unknown qualifier": ("SELECT x.status FROM orders", "Table 'x' is not in FROM"),
    "the table name behind an alias": ("SELECT orders.status FROM orders o", "Table 'orders' is not in FROM"),
    "an unknown column": ("SELECT nope FROM orders", "Column 'nope' not found in 'orders'"),
    "an unknown column of joined tables": (
        "SELECT nope FROM orders CROSS JOIN users",
        "Column 'nope' not found in any table in FROM",
    ),
    "an ambiguous column": (
        "SELECT MEASURE(count) FROM orders CROSS JOIN users",
        "Column reference 'count' is ambiguous: qualify it with its table",
    ),
    "a hidden member": ("SELECT order_id FROM line_items", "Column 'order_id' not found in 'line_items'"),
    "a primary key (hidden by default)": ("SELECT id FROM orders", "Column 'id' not found in 'orders'"),
    "a schema-qualified column": (
        "SELECT public.orders.status FROM orders",
        "Column 'public.orders.status' not found: use <column> or <table>.<column>",
    ),
    "a quoted name with SQL in it": (
        'SELECT "status; DROP TABLE orders" FROM orders',
        "Column 'status; DROP TABLE orders' not found in 'orders'",
    ),
    "a quoted member path": ('SELECT "orders.status" FROM orders', "Column 'orders.status' not found in 'orders'"),
    "__user": ("SELECT __user FROM orders", "Changing the security context with __user is not allowed"),
    "__user in WHERE": (
        "SELECT status FROM orders WHERE __user = 'admin'",
        "Changing the security context with __user is not allowed",
    ),
    "__cubeJoinField selected": (
        "SELECT __cubeJoinField FROM orders",
        "__cubeJoinField can only be used in JOIN ... ON a.__cubeJoinField = b.__cubeJoinField",
    ),
    # select items
    "a bare measure": (
        "SELECT count FROM orders",
        "Measure 'orders.count' must be aggregated: use MEASURE(count) or the aggregate function of its type (count)",
    ),
    "a segment selected": (
        "SELECT finished FROM orders",
        "Segment 'orders.finished' is a condition: use it in WHERE (finished or finished IS TRUE)",
    ),
    "* with an alias": ("SELECT * AS x FROM orders", "* can't have an alias"),
    "DATE_TRUNC of a string": (
        "SELECT DATE_TRUNC('month', status) FROM orders",
        "DATE_TRUNC needs a time dimension, but 'orders.status' is not one",
    ),
    "DATE_TRUNC to an unknown granularity": (
        "SELECT DATE_TRUNC('fortnight', created_at) FROM orders",
        'Granularity "fortnight" does not exist in dimension orders.created_at',
    ),
    "DATE_TRUNC of an expression": (
        "SELECT DATE_TRUNC('month', created_at + INTERVAL '1 day') FROM orders",
        "DATE_TRUNC takes a granularity and a time dimension, got DATE_TRUNC('MONTH', created_at + INTERVAL '1 DAY')",
    ),
    "MEASURE of a dimension": (
        "SELECT MEASURE(status) FROM orders",
        "MEASURE() needs a measure, but 'orders.status' is a dimension: the SQL API aggregates measures only",
    ),
    "MEASURE of two columns": ("SELECT MEASURE(count, revenue) FROM orders", "MEASURE() takes one measure column"),
    "MEASURE of a literal": ("SELECT MEASURE(1) FROM orders", "MEASURE() takes one measure column"),
    "SUM of a count_distinct": (
        "SELECT SUM(customers) FROM orders",
        _MISMATCH.format("orders.customers", "count_distinct", "SUM"),
    ),
    "AVG of a sum": ("SELECT AVG(revenue) FROM orders", _MISMATCH.format("orders.revenue", "sum", "AVG")),
    "COUNT of a sum": ("SELECT COUNT(revenue) FROM orders", _MISMATCH.format("orders.revenue", "sum", "COUNT")),
    "COUNT DISTINCT of a count": (
        "SELECT COUNT(DISTINCT count) FROM orders",
        _MISMATCH.format("orders.count", "count", "COUNT(DISTINCT)"),
    ),
    "MIN of a sum": ("SELECT MIN(revenue) FROM orders", _MISMATCH.format("orders.revenue", "sum", "MIN")),
    "MAX of an avg": (
        "SELECT MAX(average_amount) FROM orders",
        _MISMATCH.format("orders.average_amount", "avg", "MAX"),
    ),
    "SUM of a dimension": (
        "SELECT SUM(amount) FROM orders",
        "SUM() needs a measure, but 'orders.amount' is a dimension: the SQL API aggregates measures only",
    ),
    "SUM DISTINCT": ("SELECT SUM(DISTINCT revenue) FROM orders", "SUM() takes one measure column"),
    "COUNT(*) over joined tables": (
        "SELECT COUNT(*) FROM orders CROSS JOIN users",
        "COUNT(*) is ambiguous when several tables are joined: use MEASURE(<table>.<count>)",
    ),
    "pg_sleep": ("SELECT pg_sleep(10) FROM orders", f"Function PG_SLEEP() is not supported in SELECT: {_FUNCTIONS}"),
    "read_csv in SELECT": (
        "SELECT read_csv('/etc/passwd') FROM orders",
        f"Function READ_CSV() is not supported in SELECT: {_FUNCTIONS}",
    ),
    "pg_read_file in SELECT": (
        "SELECT pg_read_file('/etc/passwd') FROM orders",
        f"Function PG_READ_FILE() is not supported in SELECT: {_FUNCTIONS}",
    ),
    "lower() of a dimension": (
        "SELECT lower(status) FROM orders",
        f"Function LOWER() is not supported in SELECT: {_FUNCTIONS}",
    ),
    "a window": ("SELECT COUNT(*) OVER () FROM orders", "Unsupported expression in SELECT: COUNT(*) OVER ()"),
    "a literal": ("SELECT 1 FROM orders", "Unsupported expression in SELECT: 1"),
    "a scalar subquery": ("SELECT (SELECT 1) FROM orders", "Subqueries are not supported in SELECT"),
    "arithmetic": ("SELECT MEASURE(count) + 1 FROM orders", "Unsupported expression in SELECT: MEASURE(count) + 1"),
    # GROUP BY / ORDER BY / HAVING
    "a dimension missing from GROUP BY": (
        "SELECT status, MEASURE(count) FROM orders",
        "Projection references non-aggregate values",
    ),
    "a dimension missing from GROUP BY with other groups": (
        "SELECT status, user_country, MEASURE(count) FROM orders GROUP BY 1",
        "Projection references non-aggregate values",
    ),
    "HAVING without GROUP BY on a dimension": (
        "SELECT status FROM orders HAVING MEASURE(count) > 1",
        "Projection references non-aggregate values",
    ),
    "a GROUP BY position out of range": (
        "SELECT status, MEASURE(count) FROM orders GROUP BY 3",
        "GROUP BY position 3 is not in select list",
    ),
    "GROUP BY an aggregate": (
        "SELECT status, MEASURE(count) FROM orders GROUP BY 1, 2",
        "Aggregate functions are not allowed in GROUP BY: 2",
    ),
    "GROUP BY ROLLUP": (
        "SELECT status, MEASURE(count) FROM orders GROUP BY ROLLUP (status)",
        "Unsupported expression in GROUP BY: ROLLUP (status)",
    ),
    "ORDER BY an unknown column": ("SELECT status FROM orders ORDER BY nope", "Column 'nope' not found in 'orders'"),
    "ORDER BY a position out of range": (
        "SELECT status FROM orders ORDER BY 2",
        "ORDER BY position 2 is not in select list",
    ),
    "ORDER BY a dimension not grouped": (
        "SELECT status, MEASURE(count) FROM orders GROUP BY 1 ORDER BY amount",
        "Projection references non-aggregate values",
    ),
    "DISTINCT without every GROUP BY column": (
        "SELECT DISTINCT MEASURE(count) FROM orders GROUP BY status",
        "SELECT DISTINCT with GROUP BY must select every GROUP BY column",
    ),
    "HAVING on a dimension not grouped": (
        "SELECT status, MEASURE(count) FROM orders GROUP BY 1 HAVING amount > 1",
        "Projection references non-aggregate values",
    ),
    "HAVING on a bare measure": (
        "SELECT status, MEASURE(count) FROM orders GROUP BY 1 HAVING revenue > 1",
        "Measure 'orders.revenue' must be aggregated: use MEASURE(revenue) or the aggregate function of its type (sum)",
    ),
    "HAVING mixing a measure and a dimension in OR": (
        "SELECT status, MEASURE(count) FROM orders GROUP BY 1 HAVING MEASURE(count) > 1 OR status = 'x'",
        "You cannot use dimension and measure in same condition",
    ),
    "a rolling window without a date range": (
        "SELECT status, MEASURE(revenue_7d) FROM orders GROUP BY 1",
        "rolling_window measures ('orders.revenue_7d') need a time dimension with a granularity and a dateRange",
    ),
    # WHERE
    "a measure in WHERE": (
        "SELECT status FROM orders WHERE count > 1",
        "Measures can't be filtered in WHERE: use HAVING MEASURE(count) ...",
    ),
    "an aggregate in WHERE": (
        "SELECT status FROM orders WHERE MEASURE(count) > 1",
        "Aggregate functions are not allowed in WHERE: use HAVING",
    ),
    "DATE_TRUNC in WHERE": (
        "SELECT status FROM orders WHERE DATE_TRUNC('month', created_at) = '2024-01-01'",
        "DATE_TRUNC is not supported in WHERE: compare the time dimension itself",
    ),
    "a segment in OR": ("SELECT status FROM orders WHERE finished OR amount > 1", _SEGMENT),
    "a negated segment": ("SELECT status FROM orders WHERE NOT finished", _SEGMENT),
    "a segment IS FALSE": ("SELECT status FROM orders WHERE finished IS FALSE", _SEGMENT),
    "two columns compared": (
        "SELECT status FROM orders WHERE status = user_country",
        "Conditions compare one column with values: status = user_country is not supported in WHERE",
    ),
    "two values compared": (
        "SELECT status FROM orders WHERE 1 = 1",
        "Conditions compare one column with values: 1 = 1 is not supported in WHERE",
    ),
    "= NULL": ("SELECT status FROM orders WHERE status = NULL", _NULL),
    "NULL in an IN list": ("SELECT status FROM orders WHERE status IN ('a', NULL)", _NULL),
    "NOT IN with NULL": ("SELECT status FROM orders WHERE status NOT IN ('a', NULL)", _NULL),
    "ILIKE NULL": ("SELECT status FROM orders WHERE status ILIKE NULL", _NULL),
    "IN a subquery against a real table": (
        "SELECT status FROM orders WHERE amount IN (SELECT lifetime_value FROM users)",
        "Subqueries are not supported in WHERE",
    ),
    "EXISTS": (
        "SELECT status FROM orders WHERE EXISTS (SELECT 1 FROM users)",
        "Unsupported condition in WHERE: EXISTS(SELECT 1 FROM users)",
    ),
    "a string column as a condition": (
        "SELECT status FROM orders WHERE status",
        "'orders.status' is not a boolean column: compare it with a value",
    ),
    "IS TRUE on a string column": (
        "SELECT status FROM orders WHERE status IS TRUE",
        "'orders.status' is not a boolean column: compare it with a value",
    ),
    "a word for a number": (
        "SELECT status FROM orders WHERE amount = 'abc'",
        "'abc' is not a number, as 'orders.amount' needs",
    ),
    "a word for a date": (
        "SELECT status FROM orders WHERE created_at > 'yesterday-ish'",
        "Can't parse date: 'yesterday-ish'",
    ),
    "a word for a boolean": (
        "SELECT status FROM orders WHERE big_basket = 'maybe'",
        "'maybe' is not a boolean, as 'orders.big_basket' needs",
    ),
    "an unknown interval unit": (
        "SELECT status FROM orders WHERE created_at > NOW() - INTERVAL '3 fortnights'",
        "Can't parse interval '3 FORTNIGHTS'",
    ),
    "LIKE with letters": (
        "SELECT status FROM orders WHERE status LIKE 'comp%'",
        "LIKE is case-sensitive and the semantic layer matches patterns case-insensitively: use ILIKE",
    ),
    "ILIKE without %": (
        "SELECT status FROM orders WHERE status ILIKE 'completed'",
        "ILIKE without % is a case-insensitive equality, which is not supported: use =",
    ),
    "the _ wildcard": (
        "SELECT status FROM orders WHERE status ILIKE 'c_mpleted%'",
        "The '_' wildcard of LIKE is not supported: use % at the start or end",
    ),
    "an inner %": (
        "SELECT status FROM orders WHERE status ILIKE '%com%ted%'",
        "LIKE patterns may have % at the start or end only",
    ),
    "another ESCAPE character": (
        "SELECT status FROM orders WHERE status ILIKE '%a!%' ESCAPE '!'",
        "LIKE ... ESCAPE is supported with '\\' only",
    ),
    "ILIKE on a number": (
        "SELECT status FROM orders WHERE amount ILIKE '%1%'",
        "LIKE and ILIKE need a string column, but 'orders.amount' is number",
    ),
    "a function as a value": (
        "SELECT status FROM orders WHERE status = lower('X')",
        "Conditions compare one column with values: status = LOWER('X') is not supported in WHERE",
    ),
    "pg_read_file as a value": (
        "SELECT status FROM orders WHERE status = pg_read_file('/etc/passwd')",
        "Conditions compare one column with values: status = PG_READ_FILE('/etc/passwd') is not supported in WHERE",
    ),
    "pg_sleep as a condition": (
        "SELECT status FROM orders WHERE pg_sleep(1) IS NULL",
        f"Function PG_SLEEP() is not supported in WHERE: {_FUNCTIONS}",
    ),
    "a bind parameter": (
        "SELECT status FROM orders WHERE status = $1",
        "Conditions compare one column with values: status = $1 is not supported in WHERE",
    ),
    "WHERE TRUE": ("SELECT status FROM orders WHERE TRUE", "Unsupported condition in WHERE: TRUE"),
    "BETWEEN SYMMETRIC": (
        "SELECT status FROM orders WHERE amount BETWEEN SYMMETRIC 1 AND 5",
        "BETWEEN SYMMETRIC is not supported",
    ),
    "IS DISTINCT FROM": (
        "SELECT status FROM orders WHERE status IS DISTINCT FROM 'x'",
        "Unsupported condition in WHERE: status IS DISTINCT FROM 'x'",
    ),
    # LIMIT / OFFSET
    "LIMIT of a string": ("SELECT status FROM orders LIMIT 'x'", "LIMIT takes a non-negative integer"),
    "a negative LIMIT": ("SELECT status FROM orders LIMIT -1", "LIMIT takes a non-negative integer"),
    "a fractional OFFSET": ("SELECT status FROM orders OFFSET 1.5", "OFFSET takes a non-negative integer"),
    "FETCH FIRST": ("SELECT status FROM orders FETCH FIRST 3 ROWS ONLY", "LIMIT takes a non-negative integer"),
}


@pytest.mark.parametrize(("sql", "message"), ERRORS.values(), ids=ERRORS.keys())
def test_unsupported_sql_is_refused_with_a_clear_message(sql: str, message: str | None) -> None:
    with pytest.raises(QueryError) as error:
        cubesql_plan(shop_model("duckdb"), sql, ADMIN, now=NOW)

    assert error.value.status == 400
    if message is None:
        assert error.value.message.startswith("SQL parse error: ")
    else:
        assert error.value.message == message


def test_an_overlong_statement_is_refused() -> None:
    sql = "SELECT status FROM orders WHERE " + " OR ".join(["status = 'x'"] * 10_000)

    with pytest.raises(QueryError, match="The SQL query is longer than 100000 characters"):
        cubesql_plan(shop_model("duckdb"), sql, ADMIN)


def test_deep_nesting_is_refused_not_a_crash() -> None:
    sql = "SELECT status FROM orders WHERE " + "(" * 100 + "status = 'x'" + ")" * 100

    with pytest.raises(QueryError, match=r"^The SQL query is nested too deeply$"):
        cubesql_plan(shop_model("duckdb"), sql, ADMIN)


@pytest.mark.parametrize("connector", ["AND", "OR"])
def test_thousands_of_conditions_compile(executor: Executor, connector: str) -> None:
    conditions = [f"status <> 'status {i}'" for i in range(500)]
    sql = f"SELECT MEASURE(count) FROM orders WHERE {f' {connector} '.join(conditions)}"

    assert data(executor, sql) == [["10"]]


def test_an_invalid_time_zone_is_refused() -> None:
    with pytest.raises(QueryError, match="Mars/Base"):
        cubesql_plan(shop_model("duckdb"), "SELECT status FROM orders", ADMIN, timezone="Mars/Base")


def test_a_statement_with_a_second_destructive_statement_runs_nothing(executor: Executor) -> None:
    with pytest.raises(QueryError, match="Only one SQL statement is allowed"):
        cubesql_plan(shop_model(executor.dialect), "SELECT status FROM orders; DROP TABLE orders", ADMIN)

    assert executor.run("SELECT count(*) FROM orders")[1] == [(10,)]


def test_quotes_in_a_string_literal_are_a_bound_value(executor: Executor) -> None:
    sql = "SELECT MEASURE(count) FROM orders WHERE status = 'x'' OR ''1''=''1' OR status = 'a''; DROP TABLE orders; --'"

    plan = cubesql_plan(shop_model(executor.dialect), sql, ADMIN)
    rows = data(executor, sql)

    assert plan.compiled.params == ("x' OR '1'='1", "a'; DROP TABLE orders; --")
    assert "DROP" not in plan.compiled.sql
    assert rows == [["0"]]
    assert executor.run("SELECT count(*) FROM orders")[1] == [(10,)]


def test_comments_are_inert(executor: Executor) -> None:
    sql = "SELECT status -- ; DROP TABLE orders\nFROM orders /* ; DELETE FROM orders */ WHERE amount > 250"

    plan = cubesql_plan(shop_model(executor.dialect), sql, ADMIN)
    rows = data(executor, sql)

    assert "DROP" not in plan.compiled.sql
    assert "DELETE" not in plan.compiled.sql
    assert rows == [["completed"]]


def test_values_are_parameters_never_sql(executor: Executor) -> None:
    sql = "SELECT name FROM products WHERE name ILIKE '%'' OR 1=1 --%' OR category IN ('tools''--', 'x')"

    plan = cubesql_plan(shop_model(executor.dialect), sql, ADMIN)

    assert "1=1" not in plan.compiled.sql
    assert plan.compiled.params == ("%' OR 1=1 --%", "tools'--", "x")
    assert data(executor, sql) == []
