"""Which rollup answers a query: Cube's matching rules as a table (``embedadmin.semantic.sql.rollups``).

Each case names the rollups that are built (the others are not candidates), a query and a caller, and the rollup that
must answer it, or None where the data source must (a grain finer than the rollup's, a non-additive measure at another
grouping, a filter or policy member outside the rollup, ...). Matching is pure: no table is read here; that answers
equal the data source's is tested in ``tests/semantic/serving/test_pre_aggregations.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from embedadmin.semantic import QueryContext, load_model, plan_queries
from embedadmin.semantic.modeling.model import CompiledModel
from embedadmin.semantic.sql.rollups import BuiltRollup, build_query, choose_rollup, rollup_layouts
from tests.semantic.rollup_support import model_with_rollups

BUILT_AT = datetime(2026, 1, 1)
ADMIN = {"groups": ["admin"]}
REGIONAL = {"groups": ["regional"], "userAttributes": {"country": "France"}}
Y2024 = ["2024-01-01", "2024-12-31"]


@dataclass(frozen=True)
class Case:
    built: tuple[str, ...]
    query: dict[str, Any]
    answers: str | None
    caller: dict[str, Any] = field(default_factory=lambda: ADMIN)
    how: str | None = None


def count(**more: Any) -> dict[str, Any]:
    return {"measures": ["orders.count"], **more}


def month(date_range: list[str] | None = None, granularity: str = "month") -> list[dict[str, Any]]:
    td: dict[str, Any] = {"dimension": "orders.created_at", "granularity": granularity}
    if date_range is not None:
        td["dateRange"] = date_range
    return [td]


CASES = {
    # additive measures re-aggregated from a finer grouping
    "count by a rollup dimension": Case(
        ("orders.main",), count(dimensions=["orders.status"]), "orders.main", how="additive"
    ),
    "count with no dimension": Case(("orders.main",), count(), "orders.main"),
    "sum and filtered sum by month of 2024 from days": Case(
        ("orders.main",),
        {"measures": ["orders.total_amount", "orders.completed_amount"], "timeDimensions": month(Y2024)},
        "orders.main",
    ),
    "day rollup answers weeks": Case(("orders.main",), count(timeDimensions=month(granularity="week")), "orders.main"),
    "month rollup answers years": Case(
        ("orders.monthly",), count(timeDimensions=month(granularity="year")), "orders.monthly"
    ),
    "a date range without granularity, aligned to months": Case(
        ("orders.monthly",),
        count(timeDimensions=[{"dimension": "orders.created_at", "dateRange": ["2024-02-01", "2024-04-30"]}]),
        "orders.monthly",
    ),
    "calculated measure from its stored leaves": Case(
        ("orders.main",), {"measures": ["orders.completion_rate"], "dimensions": ["orders.status"]}, "orders.main"
    ),
    "filter on a rollup dimension": Case(
        ("orders.main",),
        count(filters=[{"member": "users.country", "operator": "equals", "values": ["Germany"]}]),
        "orders.main",
    ),
    "segments stored as columns": Case(("orders.main",), count(segments=["orders.completed"]), "orders.main"),
    "a measure filter on a stored measure": Case(
        ("orders.main",),
        count(dimensions=["orders.status"], filters=[{"member": "orders.count", "operator": "gt", "values": ["10"]}]),
        "orders.main",
    ),
    "a view's members stand for the cube's": Case(
        ("orders.main",), {"measures": ["sales.order_count"], "dimensions": ["sales.status"]}, "orders.main"
    ),
    "first built rollup in definition order wins": Case(
        ("orders.main", "orders.status_only"), count(dimensions=["orders.status"]), "orders.main"
    ),
    "rollups of a joined cube are candidates": Case(
        ("line_items.by_category",),
        {"measures": ["line_items.revenue"], "dimensions": ["products.category"]},
        "line_items.by_category",
    ),
    "a view rooted at orders reads an orders rollup": Case(
        ("orders.revenue_by_category",),
        {"measures": ["sales.revenue"], "dimensions": ["sales.product_category"]},
        "orders.revenue_by_category",
    ),
    # the grain
    "a grain finer than the rollup's": Case(("orders.monthly",), count(timeDimensions=month(granularity="day")), None),
    "weeks do not roll up into months": Case(
        ("orders.monthly",), count(timeDimensions=month(granularity="week")), None
    ),
    "a date range not aligned to the rollup's grain": Case(
        ("orders.monthly",), count(timeDimensions=month(["2024-01-15", "2024-03-31"])), None
    ),
    "the same range from a day rollup": Case(
        ("orders.main",), count(timeDimensions=month(["2024-01-15", "2024-03-31"])), "orders.main"
    ),
    "non-strict matching allowed by the rollup": Case(
        ("orders.monthly_loose",), count(timeDimensions=month(["2024-01-15", "2024-03-31"])), "orders.monthly_loose"
    ),
    "a time dimension the rollup lacks": Case(
        ("orders.status_only",), count(timeDimensions=month(granularity="year")), None
    ),
    "a custom granularity": Case(("orders.main",), count(timeDimensions=month(granularity="fiscal_year")), None),
    # members outside the rollup
    "a dimension outside the rollup": Case(("orders.main",), count(dimensions=["orders.size"]), None),
    "a filter on a member outside the rollup": Case(
        ("orders.main",),
        count(filters=[{"member": "users.gender", "operator": "equals", "values": ["female"]}]),
        None,
    ),
    "a segment outside the rollup": Case(("orders.monthly",), count(segments=["orders.completed"]), None),
    "a measure outside the rollup": Case(("orders.status_only",), {"measures": ["orders.completed_amount"]}, None),
    # non-additive measures: the grouping must be the rollup's
    "avg at the rollup's grouping": Case(
        ("orders.by_size",),
        {"measures": ["orders.average_order_value"], "dimensions": ["orders.size"]},
        "orders.by_size",
        how="exact",
    ),
    "avg at a coarser grouping": Case(("orders.by_size",), {"measures": ["orders.average_order_value"]}, None),
    "avg with one single-value equals filter pinning the rest": Case(
        ("orders.by_size",),
        {
            "measures": ["orders.average_order_value"],
            "filters": [{"member": "orders.size", "operator": "equals", "values": ["Large"]}],
        },
        "orders.by_size",
        how="exact",
    ),
    "avg with a two-value filter": Case(
        ("orders.by_size",),
        {
            "measures": ["orders.average_order_value"],
            "filters": [{"member": "orders.size", "operator": "equals", "values": ["Large", "Small"]}],
        },
        None,
    ),
    "count_distinct at the rollup's grain": Case(
        ("orders.customers_yearly",),
        {"measures": ["orders.customers"], "timeDimensions": month(granularity="year")},
        "orders.customers_yearly",
    ),
    "count_distinct over all time from yearly buckets": Case(
        ("orders.customers_yearly",), {"measures": ["orders.customers"]}, None
    ),
    "a measure a join multiplies, at the rollup's grouping": Case(
        ("orders.category_counts",), count(dimensions=["products.category"]), "orders.category_counts", how="exact"
    ),
    "a measure the rollup's joins multiply, at another grouping": Case(
        ("orders.revenue_by_category",), {"measures": ["line_items.revenue"], "dimensions": ["users.country"]}, None
    ),
    # the caller's row policy
    "a policy member inside the rollup": Case(
        ("orders.main",),
        {"measures": ["sales.order_count"], "dimensions": ["sales.status"]},
        "orders.main",
        caller=REGIONAL,
    ),
    "a policy member outside the rollup": Case(
        ("orders.status_only",),
        {"measures": ["sales.order_count"], "dimensions": ["sales.status"]},
        None,
        caller=REGIONAL,
    ),
    "the same rollup for an unrestricted caller": Case(
        ("orders.status_only",),
        {"measures": ["sales.order_count"], "dimensions": ["sales.status"]},
        "orders.status_only",
    ),
    # never from a rollup
    "ungrouped": Case(("orders.main",), {"dimensions": ["orders.status"], "ungrouped": True}, None),
    "another time zone": Case(("orders.main",), count(timezone="America/New_York"), None),
    "nothing built": Case((), count(), None),
}


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> CompiledModel:
    path = model_with_rollups(Path(tmp_path_factory.mktemp("rollups")) / "model")
    return load_model(path, dialect="duckdb").require()


def choose(model: CompiledModel, case: Case) -> tuple[str | None, str | None]:
    built = {rid: BuiltRollup(table=rid, version="1", last_updated_at=BUILT_AT) for rid in case.built}
    claims = case.caller
    ctx = QueryContext(
        security_context=claims, groups=claims.get("groups", []), user_attributes=claims.get("userAttributes", {})
    )
    (compiled,) = plan_queries(model, case.query, ctx).queries
    choice = choose_rollup(model, compiled, ctx, built, source_dialect="duckdb")
    return (choice.layout.rollup.id, choice.how) if choice else (None, None)


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_which_rollup_answers(model, case: Case) -> None:
    # when
    answered_by, how = choose(model, case)

    # then
    assert answered_by == case.answers
    if case.how is not None:
        assert how == case.how


def test_a_calculated_measure_that_divides_is_not_answered_for_another_dialect(model) -> None:
    # given: completion_rate divides; on PostgreSQL its arithmetic would run in DuckDB's dialect instead
    case = Case(("orders.main",), {"measures": ["orders.completion_rate"]}, None)
    built = {"orders.main": BuiltRollup(table="orders.main", version="1", last_updated_at=BUILT_AT)}
    ctx = QueryContext(security_context=ADMIN, groups=["admin"])
    (compiled,) = plan_queries(model, case.query, ctx).queries

    # when / then
    assert choose_rollup(model, compiled, ctx, built, source_dialect="postgres") is None
    assert choose_rollup(model, compiled, ctx, built, source_dialect="duckdb") is not None


def test_a_build_range_bounds_the_queries_a_rollup_answers(model) -> None:
    # given: the rollup's partitions cover 2024 only
    covered = (datetime(2024, 1, 1), datetime(2024, 12, 31, 23, 59, 59, 999000))
    built = {"orders.monthly": BuiltRollup(table="t", version="1", last_updated_at=BUILT_AT, covered=covered)}
    ctx = QueryContext(security_context=ADMIN, groups=["admin"])

    def answered(query: dict[str, Any]) -> bool:
        (compiled,) = plan_queries(model, query, ctx).queries
        return choose_rollup(model, compiled, ctx, built, source_dialect="duckdb") is not None

    # then
    assert answered(count(timeDimensions=month(["2024-03-01", "2024-08-31"])))
    assert not answered(count(timeDimensions=month(["2023-12-01", "2024-08-31"])))
    assert not answered(count(timeDimensions=month()))


def test_every_rollup_of_the_model_is_laid_out_with_its_columns(model) -> None:
    layouts = rollup_layouts(model)

    assert [rid for rid in layouts if rid.startswith("orders.")][:3] == [
        "orders.main",
        "orders.monthly",
        "orders.monthly_loose",
    ]
    main = layouts["orders.main"]
    assert [(c.name, c.role) for c in main.columns] == [
        ("orders__status", "dimension"),
        ("users__country", "dimension"),
        ("users__city", "dimension"),
        ("orders__completed", "segment"),
        ("orders__high_value", "segment"),
        ("orders__created_at_day", "time"),
        ("orders__count", "measure"),
        ("orders__total_amount", "measure"),
        ("orders__completed_amount", "measure"),
        ("orders__completed_count", "measure"),
    ]
    assert (main.root, main.joined, main.problem) == ("orders", {"users"}, None)
    assert layouts["orders.revenue_by_category"].multiplied == set()
    assert layouts["orders.category_counts"].multiplied == {"orders.count"}


# -- originalSql and rollupLambda -------------------------------------------------------------------------------------

LAMBDA_ROLLUPS = {
    "orders": """
    pre_aggregations:
      - name: base
        type: original_sql
      - name: recent
        type: rollup_lambda
        union_with_source_data: true
        rollups: [batch]
      - name: batch
        measures: [count, completed_count, total_amount]
        dimensions: [status, users.country]
        time_dimension: created_at
        granularity: day
        partition_granularity: month
"""
}
LAMBDA_CASES = {
    "a lambda answers what its rollup would": Case(
        ("orders.recent", "orders.batch"),
        count(dimensions=["orders.status"], timeDimensions=month(Y2024)),
        "orders.recent",
        how="additive",
    ),
    "a lambda before its rollup wins": Case(
        ("orders.recent", "orders.batch"), {"measures": ["orders.completion_rate"]}, "orders.recent"
    ),
    "a policy member inside the lambda": Case(
        ("orders.recent",), {"measures": ["sales.order_count"]}, "orders.recent", caller=REGIONAL
    ),
    "a lambda not served: its rollup answers": Case(("orders.batch",), count(), "orders.batch"),
    "a grain finer than the lambda's": Case(("orders.recent",), count(timeDimensions=month(granularity="hour")), None),
    "a measure outside the lambda": Case(("orders.recent",), {"measures": ["orders.customers"]}, None),
    "a dimension outside the lambda": Case(("orders.recent",), count(dimensions=["orders.size"]), None),
    "an originalSql never answers a query": Case(("orders.base",), count(dimensions=["orders.status"]), None),
}


@pytest.fixture(scope="module")
def lambda_model(tmp_path_factory: pytest.TempPathFactory) -> CompiledModel:
    path = model_with_rollups(Path(tmp_path_factory.mktemp("lambda")) / "model", rollups=LAMBDA_ROLLUPS)
    return load_model(path, dialect="duckdb").require()


@pytest.mark.parametrize("case", list(LAMBDA_CASES.values()), ids=list(LAMBDA_CASES))
def test_which_lambda_answers(lambda_model, case: Case) -> None:
    # when
    answered_by, how = choose(lambda_model, case)

    # then
    assert answered_by == case.answers
    if case.how is not None:
        assert how == case.how


def test_a_lambda_is_laid_out_as_its_rollup_and_an_original_sql_as_the_cubes_sql(lambda_model) -> None:
    layouts = rollup_layouts(lambda_model)

    recent, batch, base = layouts["orders.recent"], layouts["orders.batch"], layouts["orders.base"]
    assert (recent.table, recent.parts, recent.problem) == ("orders__recent", ("orders.batch",), None)
    assert recent.columns == batch.columns
    assert batch.bounded
    assert not base.bounded
    assert (base.kind, base.columns, base.problem) == ("originalSql", (), None)
    assert build_query(lambda_model, base).sql == "SELECT * FROM orders"


# -- count_distinct_approx: sketches where the rollups live in a source that has them ----------------------------------

APPROX = {"measures": ["orders.approx_customers", "orders.approx_completed_customers"]}
APPROX_CASES = {
    # (query, answered where sketches merge, how there; answered where the count itself is stored)
    "at the rollup's grouping": (
        {**APPROX, "dimensions": ["orders.status", "users.country"], "timeDimensions": month(granularity="day")},
        "additive",
        True,
    ),
    "a coarser grouping": ({**APPROX, "dimensions": ["orders.status"]}, "additive", False),
    "no dimension at all": (APPROX, "additive", False),
    "a time grain coarser than the rollup's": (
        {**APPROX, "timeDimensions": month(Y2024, granularity="month")},
        "additive",
        False,
    ),
    "with an additive measure beside": (
        {"measures": ["orders.approx_customers", "orders.count"], "dimensions": ["users.country"]},
        "additive",
        False,
    ),
    "a finer grain is never answered": (
        {**APPROX, "timeDimensions": month(granularity="hour")},
        None,
        False,
    ),
    "a dimension outside the rollup is never answered": ({**APPROX, "dimensions": ["orders.size"]}, None, False),
}


@pytest.fixture(scope="module")
def approx_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CompiledModel]:
    """The demo model with count_distinct_approx measures and a day rollup of them, per dialect."""
    from tests.semantic.rollup_support import APPROX_ROLLUPS, with_approx_measures

    root = Path(tmp_path_factory.mktemp("approx")) / "model"
    path = with_approx_measures(model_with_rollups(root, rollups=APPROX_ROLLUPS))
    dialects = ("duckdb", "postgres", "mysql", "clickhouse", "trino", "snowflake", "bigquery", "databricks")
    return {d: load_model(path, dialect=d, check_interval=0).require() for d in dialects}


def choose_approx(model: CompiledModel, query: dict[str, Any], rollup_dialect: str) -> tuple[str | None, str | None]:
    built = {"orders.approx_daily": BuiltRollup(table="t", version="1", last_updated_at=BUILT_AT)}
    ctx = QueryContext(security_context=ADMIN, groups=["admin"])
    (compiled,) = plan_queries(model, query, ctx).queries
    choice = choose_rollup(model, compiled, ctx, built, source_dialect=model.dialect, rollup_dialect=rollup_dialect)
    return (choice.layout.rollup.id, choice.how) if choice else (None, None)


@pytest.mark.parametrize("case", list(APPROX_CASES), ids=list(APPROX_CASES))
@pytest.mark.parametrize(
    ("dialect", "home", "sketches"),
    [
        ("clickhouse", "source", True),
        ("trino", "source", True),
        ("snowflake", "source", True),
        ("bigquery", "source", True),
        ("databricks", "source", True),
        ("postgres", "source", False),
        ("mysql", "source", False),
        ("duckdb", "store", False),
        ("postgres", "store", False),
        ("clickhouse", "store", False),
    ],
)
def test_count_distinct_approx_merges_where_the_rollups_home_keeps_sketches(
    approx_models, case: str, dialect: str, home: str, sketches: bool
) -> None:
    # given: a query of count_distinct_approx measures, the rollup kept in the source or in the DuckDB store
    query, how_merged, at_rollup_grouping = APPROX_CASES[case]
    rollup_dialect = dialect if home == "source" else "duckdb"

    # when
    answered_by, how = choose_approx(approx_models[dialect], query, rollup_dialect)

    # then: sketches merge at any coarser grouping or grain; a stored count answers only its own grouping
    if sketches:
        assert (answered_by, how) == (("orders.approx_daily", how_merged) if how_merged else (None, None))
    elif at_rollup_grouping:
        assert (answered_by, how) == ("orders.approx_daily", "exact")
    else:
        assert answered_by is None
