"""``count_distinct_approx`` measures of rollups kept in the data source: on ClickHouse (chDB) each is stored as a
``uniqState`` sketch and a query grouping coarser than the rollup (or at a coarser time grain) merges them
(``uniqMerge``), answering as the source's own ``uniq``; on PostgreSQL and MariaDB, which have no sketch, the rollup
holds the count itself and answers only its own grouping. The matching rules: ``tests/semantic/sql/
test_rollup_matching.py``; the warehouses' statements: ``tests/semantic/sql/test_rollup_sketches.py``.
"""

# ruff: noqa: F811  (fixtures imported from other test modules are redefined as test arguments, as pytest wants)

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from embedadmin.semantic.models import PreAggregationPartition
from tests.semantic.http_support import DEMO_MODEL, CoreApi, core, demo_duckdb, fresh_semantic_state  # noqa: F401
from tests.semantic.rollup_homes import Home, mysql_demo, new_home  # noqa: F401
from tests.semantic.rollup_support import APPROX_ROLLUPS, build_rollups, with_approx_measures
from tests.semantic.serving.test_pre_aggregations import load, store, used  # noqa: F401
from tests.semantic.serving.test_rollups_in_source import rollups_in
from tests.semantic.sql.test_clickhouse_queries import clickhouse_demo  # noqa: F401
from tests.semantic.sql.test_cross_database import postgres_demo  # noqa: F401
from tests.semantic.sql.test_rollup_sketches import MULTIPLIED_ROLLUPS, with_german_customers

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

APPROX = ["orders.approx_customers", "orders.approx_completed_customers"]
REGIONAL = {"groups": ["regional"], "userAttributes": {"country": "France"}}
# Queries grouping coarser than the rollup (status, country, day).
COARSER = {
    "by status": {"measures": APPROX, "dimensions": ["orders.status"]},
    "by country": {"measures": [*APPROX, "orders.count"], "dimensions": ["users.country"]},
    "no dimension": {"measures": APPROX},
    "by month of 2024": {
        "measures": APPROX,
        "timeDimensions": [
            {"dimension": "orders.created_at", "granularity": "month", "dateRange": ["2024-01-01", "2024-12-31"]}
        ],
    },
    "by year and status": {
        "measures": APPROX,
        "dimensions": ["orders.status"],
        "timeDimensions": [{"dimension": "orders.created_at", "granularity": "year"}],
    },
    "filtered on a rollup dimension": {
        "measures": APPROX,
        "filters": [{"member": "orders.status", "operator": "equals", "values": ["completed", "shipped"]}],
    },
}
AT_ROLLUP_GROUPING = {
    "measures": APPROX,
    "dimensions": ["orders.status", "users.country"],
    "timeDimensions": [
        {"dimension": "orders.created_at", "granularity": "day", "dateRange": ["2024-03-01", "2024-03-31"]}
    ],
    "order": [["orders.created_at", "asc"], ["orders.status", "asc"], ["users.country", "asc"]],
}


def approx_rollups_in(
    core: CoreApi, tmp_path: Path, home: Home, rollups: dict[str, str] = APPROX_ROLLUPS, *, german: bool = False
) -> None:
    """The deployment on ``home``'s demo data with the count_distinct_approx measures (``german``: and one filtered on
    users, :func:`with_german_customers`) and ``rollups`` (their day rollup), kept in ``home``'s rollup schema,
    built."""

    def edit(model: Path) -> None:
        with_approx_measures(model)
        if german:
            with_german_customers(model)

    rollups_in(core, tmp_path, home, rollups, edit=edit)
    build_rollups(core.cast.deployment)


def with_and_without_rollups(core: CoreApi, settings, query: dict[str, Any], token: str) -> tuple[dict, dict]:
    from_rollup = load(core, query, token)
    settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "ENABLED": False}
    from_source = load(core, query, token)
    settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "ENABLED": True}
    return from_rollup, from_source


@pytest.fixture
def clickhouse_home(request, postgres_demo) -> Any:
    found = new_home("clickhouse", request)
    yield found
    found.drop_schema()


def test_sketches_merge_on_clickhouse_as_the_source_counts(core, store, settings, tmp_path, clickhouse_home):
    # given: the rollup built into the ClickHouse database, its approximate counts kept as uniq states
    approx_rollups_in(core, tmp_path, clickhouse_home)
    (row,) = PreAggregationPartition.objects.filter(pre_aggregation="orders.approx_daily")
    types = dict(
        clickhouse_home.run(
            f"SELECT name, type FROM system.columns WHERE database = '{clickhouse_home.schema}' "
            f"AND table = '{row.table}'"
        )
    )
    assert types["orders__approx_customers"].startswith("AggregateFunction(uniq,")
    assert types["orders__approx_completed_customers"].startswith("AggregateFunction(uniq,")
    assert types["orders__count"] == "UInt64"

    for name, query in {**COARSER, "at the rollup's grouping": AT_ROLLUP_GROUPING}.items():
        # when: asked with the rollup, then of the source alone (uniq over its rows)
        from_rollup, from_source = with_and_without_rollups(core, settings, query, core.token())

        # then: merged from the rollup's sketches, equal to the source's answer; uniq is exact on these few values
        assert used(from_rollup) == "orders.approx_daily", name
        assert used(from_source) is None
        assert from_rollup["data"] == from_source["data"], name
        assert from_rollup["data"], name
        # ... and to the exact distinct count (count_distinct, from the source): the sketches were merged, not added
        exact = load(core, {**query, "measures": ["orders.customers"]}, core.token())
        keys = [k for k in exact["data"][0] if k != "orders.customers"]
        merged = {tuple(r[k] for k in keys): r["orders.approx_customers"] for r in from_rollup["data"]}
        assert merged == {tuple(r[k] for k in keys): r["orders.customers"] for r in exact["data"]}, name


def test_a_viewers_row_policy_applies_to_merged_sketches(core, store, settings, tmp_path, clickhouse_home):
    # given: a regional viewer, who sees the orders of customers in France only
    approx_rollups_in(core, tmp_path, clickhouse_home)
    token = core.token(**REGIONAL)
    query = {"measures": ["sales.approx_customers", "sales.order_count"], "dimensions": ["sales.status"]}

    # when
    from_rollup, from_source = with_and_without_rollups(core, settings, query, token)
    everyone, _ = with_and_without_rollups(core, settings, query, core.token())

    # then: the policy's filter (users.country, a rollup dimension) is applied before the sketches merge
    assert used(from_rollup) == "orders.approx_daily"
    assert from_rollup["data"] == from_source["data"]
    assert from_rollup["data"] != everyone["data"]
    french = {r["sales.status"]: r["sales.approx_customers"] for r in from_rollup["data"]}
    assert all(int(french[r["sales.status"]]) < int(r["sales.approx_customers"]) for r in everyone["data"])


def test_sketches_of_a_cube_the_rollups_joins_multiply(core, store, settings, tmp_path, clickhouse_home):
    # given: a rollup by product category (orders multiplied by line_items), one sketch filtered on users, built
    approx_rollups_in(core, tmp_path, clickhouse_home, MULTIPLIED_ROLLUPS, german=True)
    query = {
        "measures": ["orders.approx_customers", "orders.approx_german_customers"],
        "dimensions": ["products.category"],
        "order": {"products.category": "asc"},
    }

    # when
    from_rollup, from_source = with_and_without_rollups(core, settings, query, core.token())
    other = load(core, {"measures": ["users.count"]}, core.token())

    # then: the rollup answers as the source does; the deployment's other queries answer too
    assert used(from_rollup) == "orders.approx_by_category"
    assert from_rollup["data"] == from_source["data"]
    assert any(int(r["orders.approx_german_customers"]) > 0 for r in from_rollup["data"])
    assert all(
        int(r["orders.approx_german_customers"]) < int(r["orders.approx_customers"]) for r in from_rollup["data"]
    )
    assert int(other["data"][0]["users.count"]) > 0


@pytest.mark.parametrize("kind", ["postgres", "mariadb"])
def test_without_a_sketch_the_rollup_answers_its_own_grouping_only(core, store, settings, tmp_path, request, kind):
    # given: the same rollup kept in PostgreSQL or MariaDB, which hold the distinct count itself
    home = new_home(kind, request)
    try:
        approx_rollups_in(core, tmp_path, home)

        # when
        exact, exact_source = with_and_without_rollups(core, settings, AT_ROLLUP_GROUPING, core.token())
        coarser, _ = with_and_without_rollups(core, settings, COARSER["by status"], core.token())
    finally:
        home.drop_schema()

    # then: read as stored at the rollup's grouping; a coarser grouping goes to the source
    assert used(exact) == "orders.approx_daily"
    assert exact["data"] == exact_source["data"]
    assert used(coarser) is None
