"""Post-processing statements (``SELECT ... FROM (<semantic subquery>)``) against hand-written SQL on the same shop
data, on DuckDB and PostgreSQL; what they refuse; and that the subquery is read under the caller's policies."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from embedadmin.semantic import QueryContext
from embedadmin.semantic.cubesql.postprocess import PostProcess
from embedadmin.semantic.cubesql.translate import parse_statement
from embedadmin.semantic.errors import AccessDenied, QueryError
from tests.semantic.cubesql_support import data, direct, numeric, run_sql
from tests.semantic.databases import Executor

# (post-processing SQL, the SQL it means on the raw tables); ordered where order matters.
EQUIVALENT = {
    "a share of a total from grouped rows": (
        "SELECT 100.0 * SUM(CASE WHEN s = 'completed' THEN n END) / NULLIF(SUM(n), 0) AS share "
        "FROM (SELECT status AS s, MEASURE(count) AS n FROM orders GROUP BY 1) AS t",
        "SELECT 100.0 * count(*) FILTER (WHERE status = 'completed') / count(*) FROM orders",
    ),
    "a share of a subset, values in a list": (
        "SELECT 100.0 * SUM(CASE WHEN s IN ('completed', 'shipped') THEN r ELSE 0 END) / SUM(r) "
        "FROM (SELECT status AS s, MEASURE(revenue) AS r FROM orders WHERE amount < 300 GROUP BY 1)",
        "SELECT 100.0 * sum(amount) FILTER (WHERE status IN ('completed', 'shipped')) / sum(amount) FROM orders "
        "WHERE amount < 300",
    ),
    "the difference between two periods": (
        "SELECT SUM(CASE WHEN q = TIMESTAMP '2024-10-01' THEN r END) - SUM(CASE WHEN q = DATE '2024-01-01' THEN r END) "
        "FROM (SELECT DATE_TRUNC('quarter', created_at) AS q, MEASURE(revenue) AS r FROM orders GROUP BY 1)",
        "SELECT sum(amount) FILTER (WHERE created_at >= '2024-10-01') "
        "- sum(amount) FILTER (WHERE created_at < '2024-04-01') FROM orders",
    ),
    "an average of a numeric dimension over ungrouped rows": (
        "SELECT AVG(amount), MIN(amount), MAX(amount), SUM(amount), COUNT(*), COUNT(DISTINCT status) "
        "FROM (SELECT amount, status FROM orders WHERE status <> 'cancelled')",
        "SELECT avg(amount), min(amount), max(amount), sum(amount), count(*), count(DISTINCT status) FROM orders "
        "WHERE status <> 'cancelled'",
    ),
    "grouped, filtered, ordered and limited outside": (
        "SELECT c, SUM(n) AS total FROM (SELECT user_country AS c, status, MEASURE(count) AS n FROM orders "
        "GROUP BY 1, 2) WHERE status <> 'shipped' AND c IS NOT NULL GROUP BY c ORDER BY total DESC, c LIMIT 2",
        "SELECT u.country, count(*) AS total FROM orders o JOIN users u ON o.user_id = u.id "
        "WHERE o.status <> 'shipped' AND u.country IS NOT NULL GROUP BY 1 ORDER BY total DESC, 1 LIMIT 2",
    ),
    "row by row arithmetic, NULLs kept": (
        "SELECT a, ROUND(a / 7, 2), COALESCE(c, 'none'), ABS(-a) - 1 "
        "FROM (SELECT amount AS a, user_country AS c FROM orders) ORDER BY a",
        "SELECT o.amount, round(o.amount / 7.0, 2), coalesce(u.country, 'none'), abs(o.amount) - 1 "
        "FROM orders o LEFT JOIN users u ON o.user_id = u.id ORDER BY 1",
    ),
    "BETWEEN, NOT and OR with three-valued logic": (
        "SELECT a FROM (SELECT user_country AS c, amount AS a FROM orders) "
        "WHERE NOT (c = 'DE') OR a BETWEEN 60 AND 100 ORDER BY 1 DESC",
        "SELECT o.amount FROM orders o LEFT JOIN users u ON o.user_id = u.id "
        "WHERE NOT (u.country = 'DE') OR o.amount BETWEEN 60 AND 100 ORDER BY 1 DESC",
    ),
    "NULLS FIRST and NULLS LAST as written": (
        "SELECT c, n FROM (SELECT country AS c, MEASURE(count) AS n FROM users GROUP BY 1) ORDER BY c NULLS FIRST",
        "SELECT country, count(*) FROM users GROUP BY 1 ORDER BY 1 NULLS FIRST",
    ),
    "ORDER BY a name that is both an output alias and a column: the alias": (
        "SELECT -a AS a FROM (SELECT amount AS a FROM orders) ORDER BY a",
        "SELECT -amount AS a FROM orders ORDER BY a",
    ),
    "a count divided by a whole number truncates; a number field's does not": (
        "SELECT s, n / 2, r / 8 FROM (SELECT status AS s, MEASURE(count) AS n, MEASURE(revenue) AS r FROM orders "
        "GROUP BY 1) ORDER BY s",
        "SELECT status, floor(count(*) / 2.0), sum(amount) / 8.0 FROM orders GROUP BY 1 ORDER BY 1",
    ),
    "nulls sort last ascending, first descending": (
        "SELECT c, n FROM (SELECT country AS c, MEASURE(count) AS n FROM users GROUP BY 1) ORDER BY c DESC, n",
        "SELECT country, count(*) FROM users GROUP BY 1 ORDER BY 1 DESC NULLS FIRST",
    ),
}


@pytest.mark.parametrize(("semantic", "hand_written"), EQUIVALENT.values(), ids=EQUIVALENT.keys())
def test_a_post_processing_statement_returns_what_the_hand_written_sql_returns(
    executor: Executor, semantic: str, hand_written: str
) -> None:
    expected = numeric(direct(executor, hand_written))

    rows = numeric(data(executor, semantic))

    assert rows == expected
    assert rows
    assert any(value is not None for value in rows[0])


def test_an_aggregate_over_no_rows_is_one_row(executor: Executor) -> None:
    sql = "SELECT COUNT(*), SUM(amount), MAX(amount) FROM (SELECT amount FROM orders WHERE amount > 1000)"

    rows = data(executor, sql)

    assert rows == [["0", None, None]]


def test_the_outer_columns_are_named_and_typed_as_the_sql_api_types_them(duck: Executor) -> None:
    schema, _ = run_sql(
        duck,
        "SELECT s, SUM(n) AS total, COUNT(*), 100.0 * SUM(n) / 3 AS share "
        "FROM (SELECT status AS s, MEASURE(count) AS n FROM orders GROUP BY 1) GROUP BY 1",
    )

    assert [(c["name"], c["column_type"]) for c in schema] == [
        ("s", "String"),
        ("total", "Double"),
        ("count", "Int64"),
        ("share", "Double"),
    ]


def test_the_subquery_is_read_under_the_callers_row_filters(executor: Executor) -> None:
    viewer = QueryContext(security_context={"country": "DE"})
    sql = "SELECT SUM(n), COUNT(*) FROM (SELECT users_city AS city, MEASURE(count) AS n FROM orders_view GROUP BY 1)"

    as_viewer = numeric(data(executor, sql, viewer))
    as_admin = numeric(data(executor, sql))

    assert as_viewer == numeric(
        direct(
            executor,
            "SELECT count(*), count(DISTINCT u.city) FROM orders o JOIN users u ON o.user_id = u.id "
            "WHERE u.country = 'DE'",
        )
    )
    assert as_admin[0][0] == 10


def test_a_viewer_reads_through_a_subquery_only_what_was_granted(executor: Executor) -> None:
    stranger = QueryContext(only_granted=True)  # an embed viewer: a cube without a policy is not granted

    with pytest.raises(AccessDenied):
        data(executor, "SELECT SUM(a) FROM (SELECT amount AS a FROM orders)", stranger)


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT * FROM (SELECT status FROM orders)", "SELECT * is not supported"),
        ("SELECT x FROM (SELECT status FROM orders)", "'x' is not a column of the subquery"),
        ("SELECT UPPER(status) FROM (SELECT status FROM orders)", "Unsupported expression"),
        ("SELECT status FROM (SELECT status FROM (SELECT status FROM orders))", "Only cubes and views"),
        ("SELECT status, COUNT(*) FROM (SELECT status FROM orders)", "must appear in GROUP BY"),
        ("SELECT SUM(SUM(amount)) FROM (SELECT amount FROM orders)", "is not allowed here"),
        ("SELECT status FROM (SELECT status FROM orders) WHERE COUNT(*) > 1", "is not allowed here"),
        ("SELECT COUNT(*) FROM (SELECT status FROM orders) GROUP BY status HAVING COUNT(*) > 1", "HAVING"),
        ("SELECT DISTINCT status FROM (SELECT status FROM orders)", "DISTINCT"),
        ("SELECT s FROM (SELECT status AS s, status AS s FROM orders)", "two columns named 's'"),
        ("SELECT status FROM (SELECT status FROM orders) t JOIN users ON 1 = 1", "JOIN is not supported"),
        ("SELECT status FROM (SELECT status FROM orders) AS t (a)", "Only one SELECT"),
        ("SELECT SUM(amount) / 0 FROM (SELECT amount FROM orders)", "division by zero"),
        ("SELECT amount FROM (SELECT amount, status FROM orders) WHERE amount = status", "Cannot compare"),
        ("SELECT SUM(status) FROM (SELECT status FROM orders)", "Not a number"),
        ("SELECT amount FROM (SELECT amount FROM orders) WHERE amount", "must be true or false"),
        ("SELECT amount FROM (SELECT amount FROM orders) LIMIT 'x'", "LIMIT must be a whole number"),
        ("SELECT amount FROM (SELECT amount FROM orders) WHERE amount > TIMESTAMP 'soon'", "Invalid time literal"),
        ("SELECT CAST(amount AS TEXT) FROM (SELECT amount FROM orders)", "are cast"),
        ("SELECT amount * 1e999999999 FROM (SELECT amount FROM orders)", "out of range"),
        ("SELECT " + " + ".join(["amount"] * 1500) + " FROM (SELECT amount FROM orders)", "nested too deeply"),
        (
            "SELECT CASE WHEN amount > 50 THEN TIMESTAMP '2024-01-01' ELSE amount END FROM (SELECT amount FROM orders)",
            "mixes values of different types",
        ),
        ("SELECT amount FROM (SELECT amount FROM orders) WHERE amount BETWEEN SYMMETRIC 50 AND 10", "SYMMETRIC"),
        ("SELECT status FROM (SELECT status FROM orders) WHERE status = TRUE", "Cannot compare"),
        (
            "SELECT CASE WHEN s = 'A' THEN 1 END FROM (SELECT status AS s FROM orders) "
            "GROUP BY CASE WHEN s = 'a' THEN 1 END",
            "must appear in GROUP BY",
        ),
        ("SELECT amount FROM (SELECT amount FROM orders) ORDER BY 3", "ORDER BY position 3"),
    ],
)
def test_what_a_post_processing_statement_refuses(duck: Executor, sql: str, message: str) -> None:
    with pytest.raises(QueryError) as refused:
        run_sql(duck, sql)

    assert message in refused.value.message


def test_a_subquery_that_reaches_the_row_limit_is_refused_rather_than_computed_on_part_of_its_rows(
    duck: Executor,
) -> None:
    under = data(duck, "SELECT COUNT(*) FROM (SELECT amount FROM orders)", row_limit=11)
    limited = data(duck, "SELECT COUNT(*) FROM (SELECT amount FROM orders ORDER BY 1 LIMIT 3)", row_limit=11)

    with pytest.raises(QueryError) as refused:
        run_sql(duck, "SELECT COUNT(*) FROM (SELECT amount FROM orders)", row_limit=10)

    assert under == [["10"]]
    assert limited == [["3"]]  # its own LIMIT: the rows it asked for, nothing cut
    assert "row limit" in refused.value.message


def test_a_post_processing_query_too_large_to_compute_is_refused_before_computing() -> None:
    listed = ", ".join(str(i) for i in range(200))
    post = PostProcess(parse_statement(f"SELECT COUNT(*) FROM (SELECT 1) WHERE a IN ({listed})"), [("a", "Double")])

    with pytest.raises(QueryError) as refused:
        post.rows([[i] for i in range(30_000)], ["a"], complete=True)

    assert "too large to compute" in refused.value.message


def test_times_with_a_time_zone_compare_with_time_literals_as_utc() -> None:
    post = PostProcess(
        parse_statement("SELECT SUM(CASE WHEN t = TIMESTAMP '2024-10-01' THEN n END) FROM (SELECT 1)"),
        [("t", "Timestamp"), ("n", "Int64")],
    )
    berlin = timezone(timedelta(hours=2))

    rows = post.rows(
        [[datetime(2024, 10, 1, 2, 0, tzinfo=berlin), 3], [datetime(2024, 10, 2), 4]], ["t", "n"], complete=True
    )

    assert rows == [[3.0]]
