"""Multi-stage measures and time shifts (Cube's ``multi_stage``, ``group_by``, ``reduce_by``, ``add_group_by``,
``time_shift``, calendar cubes' named shifts), computed on DuckDB and PostgreSQL and compared with SQL written by
hand on the shop dataset; and what the compiler refuses, naming the file, member and feature."""

from __future__ import annotations

import textwrap
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from embedadmin.semantic import QueryContext, QueryError, load_model, meta, plan_queries
from embedadmin.semantic.modeling.model import CompiledModel
from tests.semantic.conftest import FIXTURES, NOW, run_query
from tests.semantic.databases import Executor

MODEL = FIXTURES / "multi_stage"
EXECUTORS = ["duck", pytest.param("pg", marks=pytest.mark.postgres)]
YEAR_2024 = ["2024-01-01", "2024-12-31"]


def model_for(executor: Executor) -> CompiledModel:
    return load_model(MODEL, dialect=executor.dialect, check_interval=0).require()


def cell(value: Any) -> Any:
    """Numbers compared as numbers to 9 places (the API answers strings, drivers numbers), times as ISO text."""
    if value is None:
        return None
    if hasattr(value, "isoformat"):
        return value.isoformat()[:19]
    if isinstance(value, str) and len(value) >= 19 and value[4] == "-" and value[10] == "T":
        return value[:19]
    try:
        return round(Decimal(str(value)), 9)
    except ArithmeticError:
        return str(value)


def answered(executor: Executor, query: dict[str, Any], ctx: QueryContext | None = None) -> list[tuple[Any, ...]]:
    body = run_query(executor, query, ctx, model=model_for(executor))
    keys = [*query.get("dimensions", [])]
    keys += [f"{td['dimension']}.{td['granularity']}" for td in query.get("timeDimensions", []) if "granularity" in td]
    keys += query["measures"]
    rows = [tuple(cell(row[k]) for k in keys) for row in body["data"]]
    return sorted(rows, key=repr)


def by_hand(executor: Executor, sql: str) -> list[tuple[Any, ...]]:
    return sorted((tuple(cell(v) for v in row) for row in executor.run(sql)[1]), key=repr)


@pytest.fixture(params=EXECUTORS)
def db(request: pytest.FixtureRequest) -> Executor:
    return request.getfixturevalue(request.param)


# --- measures over measures ---------------------------------------------------------------------------------------


def test_percent_of_total_is_each_row_over_the_grand_total(db: Executor) -> None:
    # group_by: [] -- the grand total of the query's rows, whatever its dimensions
    got = answered(
        db,
        {
            "dimensions": ["orders.status"],
            "measures": ["orders.revenue", "orders.revenue_share", "orders.revenue_grand_total"],
        },
    )

    assert got == by_hand(
        db,
        "SELECT status, SUM(amount), 1.0 * SUM(amount) / (SELECT SUM(amount) FROM orders), "
        "(SELECT SUM(amount) FROM orders) FROM orders GROUP BY 1",
    )


def test_a_multi_stage_measure_alone_without_dimensions(db: Executor) -> None:
    assert answered(db, {"measures": ["orders.revenue_share", "orders.revenue_grand_total"]}) == [
        (Decimal(1), Decimal(675))
    ]


def test_group_by_keeps_and_reduce_by_drops_dimensions_of_the_query(db: Executor) -> None:
    got = answered(
        db,
        {
            "dimensions": ["orders.status", "users.country"],
            "measures": ["orders.status_revenue", "orders.revenue_without_status", "orders.revenue"],
        },
    )

    assert got == by_hand(
        db,
        """
        SELECT o.status, u.country,
               SUM(SUM(o.amount)) OVER (PARTITION BY o.status),
               SUM(SUM(o.amount)) OVER (PARTITION BY u.country),
               SUM(o.amount)
        FROM orders o LEFT JOIN users u ON o.user_id = u.id
        GROUP BY 1, 2
        """,
    )


def test_add_group_by_aggregates_per_added_dimension_first(db: Executor) -> None:
    # the average of each customer's revenue, per country: one value per customer, not per order
    got = answered(db, {"dimensions": ["users.country"], "measures": ["orders.avg_user_revenue"]})

    assert got == by_hand(
        db,
        """
        SELECT country, AVG(revenue) FROM (
          SELECT u.country, o.user_id, SUM(o.amount) AS revenue
          FROM orders o LEFT JOIN users u ON o.user_id = u.id GROUP BY 1, 2
        ) per_user GROUP BY 1
        """,
    )


def test_a_measure_filter_on_a_multi_stage_measure_applies_to_the_answer(db: Executor) -> None:
    got = answered(
        db,
        {
            "dimensions": ["orders.status"],
            "measures": ["orders.revenue_share"],
            "filters": [{"member": "orders.revenue_share", "operator": "gt", "values": ["0.1"]}],
        },
    )

    assert got == by_hand(
        db,
        "SELECT status, 1.0 * SUM(amount) / (SELECT SUM(amount) FROM orders) FROM orders GROUP BY 1 "
        "HAVING 1.0 * SUM(amount) / (SELECT SUM(amount) FROM orders) > 0.1",
    )


def test_dimension_filters_apply_to_every_stage(db: Executor) -> None:
    got = answered(
        db,
        {
            "dimensions": ["orders.status"],
            "measures": ["orders.revenue_share"],
            "filters": [{"member": "users.country", "operator": "equals", "values": ["DE"]}],
        },
    )

    assert got == by_hand(
        db,
        "SELECT o.status, 1.0 * SUM(o.amount) / (SELECT SUM(o2.amount) FROM orders o2 JOIN users u2 "
        "ON o2.user_id = u2.id WHERE u2.country = 'DE') FROM orders o JOIN users u ON o.user_id = u.id "
        "WHERE u.country = 'DE' GROUP BY 1",
    )


# --- time shifts --------------------------------------------------------------------------------------------------

MONTHLY = """
WITH m AS (SELECT date_trunc('month', created_at) AS month, SUM(amount) AS revenue FROM orders GROUP BY 1),
months AS (
  SELECT month FROM m
  UNION SELECT month + INTERVAL '1 month' FROM m
  UNION SELECT month - INTERVAL '1 month' FROM m
)
SELECT months.month, cur.revenue, prev.revenue, cur.revenue - prev.revenue, nxt.revenue
FROM months
LEFT JOIN m cur ON cur.month = months.month
LEFT JOIN m prev ON prev.month = months.month - INTERVAL '1 month'
LEFT JOIN m nxt ON nxt.month = months.month + INTERVAL '1 month'
WHERE months.month >= '2024-01-01' AND months.month < '2025-01-01'
"""


def test_prior_and_next_periods_are_the_measure_a_period_away(db: Executor) -> None:
    got = answered(
        db,
        {
            "measures": [
                "orders.revenue",
                "orders.revenue_prior_month",
                "orders.revenue_change",
                "orders.revenue_next_month",
            ],
            "timeDimensions": [{"dimension": "orders.created_at", "granularity": "month", "dateRange": YEAR_2024}],
        },
    )

    assert got == by_hand(db, MONTHLY)


def test_a_prior_period_reads_rows_before_the_date_range(db: Executor) -> None:
    # February's prior month is January: its rows are outside the range asked for
    got = answered(
        db,
        {
            "measures": ["orders.revenue_prior_month"],
            "timeDimensions": [
                {"dimension": "orders.created_at", "granularity": "month", "dateRange": ["2024-02-01", "2024-02-29"]}
            ],
        },
    )

    assert got == by_hand(
        db,
        "SELECT TIMESTAMP '2024-02-01 00:00:00', SUM(amount) FROM orders "
        "WHERE created_at >= '2024-01-01' AND created_at < '2024-02-01'",
    )


def test_a_time_shift_of_a_rolling_window_measure(db: Executor) -> None:
    months = [f"2024-{m:02d}-01" for m in range(1, 7)]
    values = " UNION ALL ".join(f"SELECT CAST('{m}' AS TIMESTAMP) AS month" for m in months)
    got = answered(
        db,
        {
            "measures": ["orders.revenue_ytd", "orders.revenue_prior_month_ytd"],
            "timeDimensions": [
                {"dimension": "orders.created_at", "granularity": "month", "dateRange": ["2024-01-01", "2024-06-30"]}
            ],
        },
    )

    assert got == by_hand(
        db,
        f"""
        SELECT months.month,
          (SELECT SUM(amount) FROM orders WHERE created_at >= date_trunc('year', months.month)
             AND created_at < months.month + INTERVAL '1 month'),
          (SELECT SUM(amount) FROM orders WHERE created_at >= date_trunc('year', months.month - INTERVAL '1 month')
             AND created_at < months.month)
        FROM ({values}) months
        """,
    )


def test_a_named_time_shift_maps_dates_through_the_calendar_cube(db: Executor) -> None:
    got = answered(
        db,
        {
            "measures": ["orders.revenue", "orders.revenue_retail_prior"],
            "timeDimensions": [{"dimension": "retail_calendar.date", "granularity": "day", "dateRange": YEAR_2024}],
        },
    )

    assert got == by_hand(
        db,
        """
        WITH calendar AS (
          SELECT CAST('2024-02-10' AS DATE) AS d, CAST('2024-01-15' AS DATE) AS prior_d UNION ALL
          SELECT CAST('2024-03-31' AS DATE), CAST('2024-02-10' AS DATE) UNION ALL
          SELECT CAST('2024-06-02' AS DATE), CAST('2024-06-01' AS DATE) UNION ALL
          SELECT CAST('2024-06-01' AS DATE), CAST('2024-05-01' AS DATE)
        )
        SELECT CAST(c.d AS TIMESTAMP),
          (SELECT SUM(amount) FROM orders WHERE CAST(created_at AS DATE) = c.d),
          (SELECT SUM(amount) FROM orders WHERE CAST(created_at AS DATE) = c.prior_d)
        FROM calendar c
        """,
    )


def test_an_interval_shift_on_a_calendar_dimension_moves_its_key(db: Executor) -> None:
    got = answered(
        db,
        {
            "measures": ["orders.revenue_prior_day"],
            "timeDimensions": [{"dimension": "retail_calendar.date", "granularity": "day", "dateRange": YEAR_2024}],
        },
    )

    # each calendar date shows the orders of the day before: March 31st shows March 30th's 20, June 2nd June
    # 1st's 40 (the dates whose day before has no order have no row: the query's rows are its orders')
    assert got == [("2024-03-31T00:00:00", Decimal(20)), ("2024-06-02T00:00:00", Decimal(40))]


# --- rolling windows over a measure's values ----------------------------------------------------------------------


def test_a_multi_stage_rolling_window_adds_up_each_periods_values(db: Executor) -> None:
    # Cube's year-to-date of a distinct count: the sum of each month's distinct customers (not the distinct
    # customers of the year so far)
    months = [f"2024-{m:02d}-01" for m in range(1, 13)]
    values = " UNION ALL ".join(f"SELECT CAST('{m}' AS TIMESTAMP) AS month" for m in months)
    got = answered(
        db,
        {
            "measures": ["orders.users_ytd"],
            "timeDimensions": [{"dimension": "orders.created_at", "granularity": "month", "dateRange": YEAR_2024}],
        },
    )

    assert got == by_hand(
        db,
        f"""
        WITH m AS (SELECT date_trunc('month', created_at) AS month, COUNT(DISTINCT user_id) AS users
                   FROM orders GROUP BY 1)
        SELECT months.month,
          (SELECT SUM(users) FROM m WHERE m.month >= date_trunc('year', months.month) AND m.month <= months.month)
        FROM ({values}) months
        """,
    )


def test_a_multi_stage_rolling_window_needs_a_date_range() -> None:
    model = load_model(MODEL, dialect="duckdb", check_interval=0).require()

    with pytest.raises(QueryError, match="need a time dimension with a granularity and a dateRange"):
        plan_queries(model, {"measures": ["orders.users_ytd"]}, QueryContext(), now=NOW)


def test_an_ungrouped_query_cannot_use_multi_stage_measures() -> None:
    model = load_model(MODEL, dialect="duckdb", check_interval=0).require()

    with pytest.raises(QueryError, match="Multi-stage measures cannot be used in an ungrouped query"):
        plan_queries(model, {"measures": ["orders.revenue_share"], "ungrouped": True}, QueryContext(), now=NOW)


# --- through a view, with its access policy -----------------------------------------------------------------------


def test_a_views_multi_stage_members_answer_with_the_views_row_filters(db: Executor) -> None:
    viewer = QueryContext(security_context={"country": "DE"}, groups=["viewer"])

    got = answered(
        db,
        {"dimensions": ["sales.status"], "measures": ["sales.revenue", "sales.revenue_share"]},
        viewer,
    )

    # the grand total is the viewer's rows' total, not the whole table's
    assert got == by_hand(
        db,
        "SELECT o.status, SUM(o.amount), 1.0 * SUM(o.amount) / (SELECT SUM(o2.amount) FROM orders o2 "
        "JOIN users u2 ON o2.user_id = u2.id WHERE u2.country = 'DE') "
        "FROM orders o JOIN users u ON o.user_id = u.id WHERE u.country = 'DE' GROUP BY 1",
    )


def test_every_value_a_caller_sends_is_a_bound_parameter() -> None:
    model = load_model(MODEL, dialect="duckdb", check_interval=0).require()
    query = {
        "dimensions": ["orders.status"],
        "measures": ["orders.revenue_share", "orders.revenue_prior_month"],
        "filters": [{"member": "orders.status", "operator": "equals", "values": ["x' OR '1'='1"]}],
        "timeDimensions": [{"dimension": "orders.created_at", "granularity": "month", "dateRange": YEAR_2024}],
    }

    compiled = plan_queries(model, query, QueryContext(), now=NOW).queries[0]

    # both stages that read orders (this month's, the prior month's) filter them by the value, as a parameter
    # bound from the query's filter (so that a query differing only in that value is the same statement rebound)
    assert "OR '1'='1" not in compiled.sql
    assert compiled.params.count("x' OR '1'='1") == 2
    assert [o.leaf for o in compiled.origins if o is not None] == [0, 0]


# --- /v1/meta -----------------------------------------------------------------------------------------------------


def test_meta_lists_multi_stage_measures_as_cube_does() -> None:
    body = meta(load_model(MODEL, dialect="duckdb", check_interval=0).require(), QueryContext(groups=["admin"]))

    orders = {m["name"]: m for m in next(c for c in body["cubes"] if c["name"] == "orders")["measures"]}
    assert (orders["orders.revenue_share"]["type"], orders["orders.revenue_share"]["aggType"]) == ("number", "number")
    assert (orders["orders.status_revenue"]["type"], orders["orders.status_revenue"]["aggType"]) == ("number", "sum")
    assert orders["orders.users_ytd"]["cumulative"] is True
    sales = next(c for c in body["cubes"] if c["name"] == "sales")
    assert "sales.revenue_prior_month" in [m["name"] for m in sales["measures"]]


# --- refused, naming the file, the member and the feature ---------------------------------------------------------


def refusal(tmp_path: Path, measure: str) -> list[str]:
    root = tmp_path / "model"
    (root / "cubes").mkdir(parents=True)
    text = textwrap.dedent(
        """
        cubes:
          - name: orders
            sql_table: orders
            dimensions:
              - name: id
                sql: id
                type: number
                primary_key: true
              - name: status
                sql: status
                type: string
              - name: created_at
                sql: created_at
                type: time
            measures:
              - name: revenue
                sql: amount
                type: sum
        """
    ).lstrip("\n")
    text += textwrap.indent(textwrap.dedent(measure).lstrip("\n"), "      ")
    (root / "cubes" / "orders.yml").write_text(text)
    version = load_model(root, dialect="duckdb", check_interval=0)
    assert version.model is None
    assert version.error is not None
    return [str(p) for p in version.error.problems]


@pytest.mark.parametrize(
    ("measure", "problem"),
    [
        (
            "- name: ranked\n  multi_stage: true\n  type: rank\n  order_by: [{sql: '{revenue}', dir: asc}]\n",
            'model/cubes/orders.yml:22: measure orders.ranked: "order_by" is not supported by this server',
        ),
        (
            "- name: ranked\n  multi_stage: true\n  sql: '{revenue}'\n  type: rank\n",
            'model/cubes/orders.yml:22: measure orders.ranked: type "rank" (a multi-stage form) is not supported by '
            "this server",
        ),
        (
            "- name: prior\n  sql: '{revenue}'\n  type: number\n  time_shift: [{interval: 1 year, type: prior}]\n",
            'model/cubes/orders.yml:22: measure orders.prior: "time_shift" needs multi_stage: true',
        ),
        (
            "- name: share\n  multi_stage: true\n  sql: amount\n  type: sum\n",
            "model/cubes/orders.yml:21: measure orders.share: the sql of a multi_stage measure must use other measures",
        ),
        (
            "- name: share\n  multi_stage: true\n  sql: '{revenue} + {status}'\n  type: number\n",
            "model/cubes/orders.yml:21: measure orders.share: the sql of a multi_stage measure may use measures "
            "only, not orders.status",
        ),
        (
            "- name: counted\n  multi_stage: true\n  sql: '{revenue}'\n  type: count\n  group_by: [status]\n",
            'model/cubes/orders.yml:23: measure orders.counted: "group_by" re-aggregates the query\'s rows: type '
            "must be sum, avg, min or max",
        ),
        (
            "- name: ratio\n  multi_stage: true\n  sql: '{revenue}'\n  type: number\n  add_group_by: [status]\n",
            'model/cubes/orders.yml:23: measure orders.ratio: "add_group_by" needs an aggregating type (sum, avg, '
            'min, max...), not "number"',
        ),
        (
            "- name: shifted\n  multi_stage: true\n  sql: '{revenue}'\n  type: number\n  time_shift:\n"
            "    - {interval: 1 year, type: prior}\n"
            "    - {time_dimension: created_at, interval: 1 month, type: prior}\n",
            'model/cubes/orders.yml:24: measure orders.shifted: "time_dimension" is required when time_shift has '
            "several items",
        ),
        (
            "- name: shifted\n  multi_stage: true\n  sql: '{revenue}'\n  type: number\n  time_shift:\n"
            "    - {time_dimension: status, interval: 1 year, type: prior}\n",
            'model/cubes/orders.yml:24: measure orders.shifted: time_dimension "orders.status" is not a time dimension',
        ),
        (
            "- name: shifted\n  multi_stage: true\n  sql: '{revenue}'\n  type: number\n  time_shift:\n"
            "    - {interval: 1 year, type: sideways}\n",
            'model/cubes/orders.yml:24: measure orders.shifted: type must be "prior" or "next"',
        ),
        (
            "- name: by_currency\n  multi_stage: true\n  type: number\n  case:\n    switch: '{status}'\n"
            "    when: [{value: EUR, sql: '{revenue}'}]\n",
            'model/cubes/orders.yml:22: measure orders.by_currency: "case" is not supported by this server',
        ),
    ],
)
def test_forms_not_computed_are_model_errors(tmp_path: Path, measure: str, problem: str) -> None:
    assert problem in refusal(tmp_path, measure)
