"""SECURITY_CONTEXT, FILTER_PARAMS, FILTER_GROUP and SQL_UTILS in model SQL, on DuckDB and PostgreSQL.

Each answer is compared with SQL written by hand for the same question over the shop dataset (``dataset.py``);
every value that comes from a caller or a query is a bound parameter, never text of the statement.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from embedadmin.semantic import ModelError, QueryContext, QueryError, load_model, plan_queries
from embedadmin.semantic.modeling.model import CompiledModel
from tests.semantic.conftest import run_query
from tests.semantic.databases import Executor
from tests.semantic.sql.test_filters import INJECTIONS

MODEL = """
cubes:
  - name: country_orders
    sql: >
      SELECT o.*, u.country FROM orders o JOIN users u ON u.id = o.user_id
      WHERE {SECURITY_CONTEXT.country.filter('u.country')}
    measures:
      - name: count
        type: count
      - name: amount
        sql: amount
        type: sum
    dimensions:
      - name: id
        sql: id
        type: number
        primary_key: true
      - name: viewer_country
        sql: "{SECURITY_CONTEXT.country.unsafeValue()}"
        type: string

  - name: required_orders
    sql: >
      SELECT o.* FROM orders o JOIN users u ON u.id = o.user_id
      WHERE {SECURITY_CONTEXT.country.requiredFilter('u.country')}
    measures:
      - name: count
        type: count

  - name: lambda_orders
    sql: >
      SELECT o.* FROM orders o JOIN users u ON u.id = o.user_id
      WHERE {SECURITY_CONTEXT.country.filter(lambda c: f"u.country IN ({c})")}
    measures:
      - name: count
        type: count

  - name: spend
    sql: >
      SELECT user_id, sum(amount) AS spent, max(created_at) AS last_at, min(status) AS first_status
      FROM orders
      WHERE {FILTER_PARAMS.spend.last_at.filter('created_at')} AND {FILTER_PARAMS.spend.status.filter('status')}
      GROUP BY user_id
    measures:
      - name: spent
        sql: spent
        type: sum
    dimensions:
      - name: user_id
        sql: user_id
        type: number
        primary_key: true
        public: true
      - name: last_at
        sql: last_at
        type: time
      - name: status
        sql: first_status
        type: string

  - name: windowed
    sql: >
      SELECT user_id, sum(amount) AS spent, max(created_at) AS last_at FROM orders
      WHERE {FILTER_PARAMS.windowed.last_at.filter(
        lambda start, end: f"created_at >= CAST({start} AS TIMESTAMPTZ) AND created_at <= CAST({end} AS TIMESTAMPTZ)"
      )}
      GROUP BY user_id
    measures:
      - name: spent
        sql: spent
        type: sum
    dimensions:
      - name: user_id
        sql: user_id
        type: number
        primary_key: true
        public: true
      - name: last_at
        sql: last_at
        type: time

  - name: filter_group
    sql: >
      SELECT * FROM (SELECT 1 AS a, 3 AS b UNION ALL SELECT 2 AS a, 2 AS b UNION ALL SELECT 3 AS a, 1 AS b) AS data
      WHERE {FILTER_GROUP(FILTER_PARAMS.filter_group.a.filter("a"), FILTER_PARAMS.filter_group.b.filter("b"))}
    measures:
      - name: count
        type: count
    dimensions:
      - name: a
        sql: a
        type: number
      - name: b
        sql: b
        type: number

  - name: local_orders
    sql_table: orders
    measures:
      - name: count
        type: count
    dimensions:
      - name: id
        sql: id
        type: number
        primary_key: true
        public: true
      - name: created_local
        sql: "{SQL_UTILS.convertTz('{CUBE}.created_at')}"
        type: time

views:
  - name: spending
    cubes:
      - join_path: spend
        includes: [spent, last_at, status]
"""


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("context_variables")
    (root / "model.yml").write_text(textwrap.dedent(MODEL))
    return root


def model(root: Path, dialect: str) -> CompiledModel:
    return load_model(root, dialect=dialect, check_interval=0).require()


def answer(executor: Executor, root: Path, query: dict[str, Any], claims: dict[str, Any] | None = None) -> list:
    body = run_query(executor, query, QueryContext(security_context=claims or {}), model=model(root, executor.dialect))
    return [tuple(row.values()) for row in body["data"]]


def scalar(executor: Executor, sql: str) -> Any:
    return executor.run(sql)[1][0][0]


# --- SECURITY_CONTEXT ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("claims", "where"),
    [
        ({"country": "DE"}, "u.country = 'DE'"),
        ({"country": ["DE", "FR"]}, "u.country IN ('DE', 'FR')"),
        ({"country": []}, "FALSE"),
        ({"country": ""}, "u.country = ''"),  # a value, not "unset" as Cube reads a falsy one
        ({}, "TRUE"),  # unset: Cube's 1 = 1
    ],
)
def test_security_context_filter_binds_the_callers_value(
    executor: Executor, model_dir: Path, claims: dict[str, Any], where: str
) -> None:
    got = answer(executor, model_dir, {"measures": ["country_orders.count", "country_orders.amount"]}, claims)

    count, amount = executor.run(
        f"SELECT count(*), sum(amount) FROM orders o JOIN users u ON u.id = o.user_id WHERE {where}"
    )[1][0]
    assert got == [(str(count), None if amount is None else str(amount))]


@pytest.mark.parametrize("value", INJECTIONS)
def test_an_injection_through_a_security_context_value_stays_a_value(
    executor: Executor, model_dir: Path, value: str
) -> None:
    query = {"measures": ["country_orders.count"], "dimensions": ["country_orders.viewer_country"]}
    compiled, benign = (
        plan_queries(model(model_dir, executor.dialect), query, QueryContext(security_context={"country": v})).queries[
            0
        ]
        for v in (value, "DE")
    )

    assert compiled.sql == benign.sql  # the statement's text does not depend on the value
    assert compiled.params.count(value) == 2  # the filter's and unsafeValue()'s, each bound
    assert answer(executor, model_dir, {"measures": ["country_orders.count"]}, {"country": value}) == [("0",)]
    assert scalar(executor, "SELECT count(*) FROM orders") == 10


def test_unsafe_value_is_the_value_bound_and_null_when_unset(executor: Executor, model_dir: Path) -> None:
    query = {"measures": ["country_orders.count"], "dimensions": ["country_orders.viewer_country"]}

    assert answer(executor, model_dir, query, {"country": "FR"}) == [("FR", "2")]
    assert answer(executor, model_dir, query, {}) == [(None, "9")]


def test_required_filter_refuses_a_caller_without_the_value(executor: Executor, model_dir: Path) -> None:
    with pytest.raises(QueryError, match=r"^Filter for u\.country is required$"):
        answer(executor, model_dir, {"measures": ["required_orders.count"]}, {})

    assert answer(executor, model_dir, {"measures": ["required_orders.count"]}, {"country": "FR"}) == [("2",)]


def test_a_function_form_gets_each_value_bound(executor: Executor, model_dir: Path) -> None:
    assert answer(executor, model_dir, {"measures": ["lambda_orders.count"]}, {"country": ["FR", "US"]}) == [("4",)]
    assert answer(executor, model_dir, {"measures": ["lambda_orders.count"]}, {"country": "DE"}) == [("4",)]


def test_compiled_statements_are_kept_per_caller_when_the_sql_reads_the_security_context(model_dir: Path) -> None:
    compiled = model(model_dir, "duckdb")
    query = {"measures": ["country_orders.count"]}

    first = plan_queries(compiled, query, QueryContext(security_context={"country": "DE"})).queries[0]
    second = plan_queries(compiled, query, QueryContext(security_context={"country": "FR"})).queries[0]

    assert (first.params, second.params) == (("DE",), ("FR",))


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("{SECURITY_CONTEXT.exp.filter('x')}", "securityContext.exp differs between tokens of one viewer"),
        ("{SECURITY_CONTEXT.country}", "SECURITY_CONTEXT names a claim and a method"),
        ("x = '{SECURITY_CONTEXT.country.unsafeValue()}'", "cannot be part of a name or of a string literal"),
        ("{SECURITY_CONTEXT.country.filter(lambda c: f\"x = '{c}'\")}", "write it where a value goes"),
        ("{FILTER_PARAMS.nope.id.filter('id')}", "unknown cube 'nope'"),
        ("{FILTER_PARAMS.t.id.filter(lambda x: f'{x.upper()}')}", "inside the function's f-string write"),
        ("{FILTER_GROUP(SECURITY_CONTEXT.x.filter('x'))}", "FILTER_GROUP takes FILTER_PARAMS...filter(...) only"),
        ("{SQL_UTILS.timeDimension('x')}", "SQL_UTILS has convertTz(sql) only"),
        ("{securityContext.country}", "in SQL write SECURITY_CONTEXT.x.filter('column')"),
    ],
)
def test_context_variables_written_wrong_are_model_errors(tmp_path: Path, sql: str, message: str) -> None:
    quoted = sql.replace('"', '\\"')
    (tmp_path / "t.yml").write_text(
        textwrap.dedent(
            f"""\
            cubes:
              - name: t
                sql_table: orders
                dimensions:
                  - name: id
                    sql: id
                    type: number
                  - name: x
                    sql: "{quoted}"
                    type: string
            """
        )
    )

    with pytest.raises(ModelError) as caught:
        load_model(tmp_path, dialect="duckdb", check_interval=0).require()

    assert caught.value.problems[0].line == 9
    assert message in caught.value.problems[0].message


# --- FILTER_PARAMS and FILTER_GROUP --------------------------------------------------------------------------------

SPEND_CASES = {
    "date range": (
        {"timeDimensions": [{"dimension": "spend.last_at", "dateRange": ["2024-03-01", "2024-06-30"]}]},
        "created_at >= '2024-03-01' AND created_at < '2024-07-01'",
    ),
    "before": (
        {"filters": [{"member": "spend.last_at", "operator": "beforeDate", "values": ["2024-02-01"]}]},
        "created_at < '2024-02-01'",
    ),
    "after": (
        {"filters": [{"member": "spend.last_at", "operator": "afterDate", "values": ["2024-06-01"]}]},
        "created_at > '2024-06-01 23:59:59.999'",
    ),
    "equals": (
        {"filters": [{"member": "spend.status", "operator": "equals", "values": ["completed"]}]},
        "status = 'completed'",
    ),
    "in": (
        {"filters": [{"member": "spend.status", "operator": "equals", "values": ["completed", "shipped"]}]},
        "status IN ('completed', 'shipped')",
    ),
    "contains": (
        {"filters": [{"member": "spend.status", "operator": "contains", "values": ["SHIP"]}]},
        "status ILIKE '%ship%'",
    ),
    "notEquals": (
        {"filters": [{"member": "spend.status", "operator": "notEquals", "values": ["completed"]}]},
        "status <> 'completed'",
    ),
    "two members": (
        {
            "filters": [{"member": "spend.status", "operator": "equals", "values": ["completed"]}],
            "timeDimensions": [{"dimension": "spend.last_at", "dateRange": ["2024-01-01", "2024-01-31"]}],
        },
        "status = 'completed' AND created_at >= '2024-01-01' AND created_at < '2024-02-01'",
    ),
    "or of one member": (
        {
            "filters": [
                {
                    "or": [
                        {"member": "spend.status", "operator": "equals", "values": ["shipped"]},
                        {"member": "spend.status", "operator": "equals", "values": ["cancelled"]},
                    ]
                }
            ]
        },
        "(status = 'shipped' OR status = 'cancelled')",
    ),
    "no filter": ({}, "TRUE"),
}


@pytest.mark.parametrize("case", list(SPEND_CASES), ids=list(SPEND_CASES))
def test_filter_params_push_the_querys_filters_into_the_cubes_sql(
    executor: Executor, model_dir: Path, case: str
) -> None:
    query, inner = SPEND_CASES[case]
    got = answer(
        executor,
        model_dir,
        {"measures": ["spend.spent"], "dimensions": ["spend.user_id"], "order": {"spend.user_id": "asc"}, **query},
    )

    # The pushed-down condition decides which orders are summed: the outer filter alone would sum all of them.
    expected = executor.run(f"SELECT user_id, sum(amount) FROM orders WHERE {inner} GROUP BY user_id ORDER BY user_id")[
        1
    ]
    assert got == [(None if user is None else str(user), str(spent)) for user, spent in expected]


def test_a_view_members_filter_is_pushed_into_the_cube_it_stands_for(executor: Executor, model_dir: Path) -> None:
    query = {
        "measures": ["spending.spent"],
        "filters": [{"member": "spending.status", "operator": "equals", "values": ["completed"]}],
    }

    got = answer(executor, model_dir, query)

    assert got == [(str(scalar(executor, "SELECT sum(amount) FROM orders WHERE status = 'completed'")),)]


def test_an_or_with_another_member_pushes_nothing_for_that_or(executor: Executor, model_dir: Path) -> None:
    query = {
        "measures": ["spend.spent"],
        "filters": [
            {
                "or": [
                    {"member": "spend.status", "operator": "equals", "values": ["shipped"]},
                    {"member": "spend.user_id", "operator": "equals", "values": ["1"]},
                ]
            }
        ],
    }
    compiled = plan_queries(model(model_dir, executor.dialect), query, QueryContext()).queries[0]

    got = answer(executor, model_dir, query)

    # Nothing pushed: each user's total over all their orders, for users whose first status is shipped or user 1.
    assert "WHERE 1 = 1 AND 1 = 1" in compiled.sql
    totals = dict(executor.run("SELECT user_id, sum(amount) FROM orders GROUP BY user_id")[1])
    firsts = dict(executor.run("SELECT user_id, min(status) FROM orders GROUP BY user_id")[1])
    assert got == [(str(sum(t for u, t in totals.items() if u is not None and (firsts[u] == "shipped" or u == 1))),)]


def test_a_function_form_gets_the_date_range_bounds_as_parameters(executor: Executor, model_dir: Path) -> None:
    query = {
        "measures": ["windowed.spent"],
        "dimensions": ["windowed.user_id"],
        "timeDimensions": [{"dimension": "windowed.last_at", "dateRange": ["2024-01-01", "2024-02-29"]}],
        "order": {"windowed.user_id": "asc"},
    }
    compiled = plan_queries(model(model_dir, executor.dialect), query, QueryContext()).queries[0]

    got = answer(executor, model_dir, query)

    assert "2024-01-01T00:00:00.000Z" in compiled.params
    assert "2024-01-01" not in compiled.sql
    expected = executor.run(
        "SELECT user_id, sum(amount) FROM orders WHERE created_at >= '2024-01-01' AND created_at < '2024-03-01' "
        "GROUP BY user_id ORDER BY user_id"
    )[1]
    assert got == [(None if user is None else str(user), str(spent)) for user, spent in expected]


@pytest.mark.parametrize(
    ("filters", "rows"),
    [
        # Cube's documented example: FILTER_GROUP keeps the query's AND ...
        (
            [
                {"member": "filter_group.a", "operator": "gt", "values": ["1"]},
                {"member": "filter_group.b", "operator": "gt", "values": ["1"]},
            ],
            [(2, 2)],
        ),
        # ... and its OR, which two FILTER_PARAMS joined by OR in the SQL would get wrong.
        (
            [
                {
                    "or": [
                        {"member": "filter_group.a", "operator": "gt", "values": ["1"]},
                        {"member": "filter_group.b", "operator": "gt", "values": ["1"]},
                    ]
                }
            ],
            [(1, 3), (2, 2), (3, 1)],
        ),
        ([], [(1, 3), (2, 2), (3, 1)]),
    ],
)
def test_filter_group_keeps_the_querys_and_and_or(
    executor: Executor, model_dir: Path, filters: list, rows: list
) -> None:
    query = {
        "dimensions": ["filter_group.a", "filter_group.b"],
        "filters": filters,
        "order": {"filter_group.a": "asc"},
    }

    got = answer(executor, model_dir, query)

    assert got == [(str(a), str(b)) for a, b in rows]


def test_filter_values_pushed_down_are_rebound_for_a_query_of_the_same_shape(model_dir: Path) -> None:
    compiled = model(model_dir, "duckdb")
    ask = lambda status: {  # noqa: E731
        "measures": ["spend.spent"],
        "filters": [{"member": "spend.status", "operator": "equals", "values": [status]}],
    }

    plans = [plan_queries(compiled, ask(status), QueryContext()).queries[0] for status in ("a", "b", "c")]

    assert [p.params for p in plans] == [("a", "a"), ("b", "b"), ("c", "c")]
    assert len({p.sql for p in plans}) == 1


# --- SQL_UTILS.convertTz -------------------------------------------------------------------------------------------


def test_convert_tz_gives_the_querys_wall_clock_time(executor: Executor, model_dir: Path) -> None:
    query = {
        "dimensions": ["local_orders.id", "local_orders.created_local"],
        "order": {"local_orders.id": "asc"},
        "timezone": "Europe/Berlin",
    }

    got = answer(executor, model_dir, query)

    berlin = ZoneInfo("Europe/Berlin")
    stored = executor.run("SELECT id, created_at FROM orders ORDER BY id")[1]
    expected = [
        (str(i), f"{at.replace(tzinfo=ZoneInfo('UTC')).astimezone(berlin).replace(tzinfo=None):%Y-%m-%dT%H:%M:%S}.000")
        for i, at in stored
    ]
    assert got == expected
    assert dict(got)["5"] == "2024-03-31T03:30:00.000"  # across the spring DST change
