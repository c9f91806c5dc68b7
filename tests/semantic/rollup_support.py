"""The demo model with rollup pre-aggregations, and helpers that build them: shared by the matching, serving and
Platform API tests of pre-aggregations."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from embedadmin.accounts.models import Deployment
from embedadmin.semantic.models import PreAggregationPartition
from embedadmin.semantic.serving.pre_aggregations import pre_aggregation_partition_build, pre_aggregations_refresh
from embedadmin.semantic.tasks import serve
from tests.semantic.http_support import DEMO_MODEL

# Appended to each cube's file (each file ends inside its one cube, at the cube's indentation).
ROLLUPS = {
    "orders": """
    pre_aggregations:
      - name: main
        measures: [count, total_amount, completed_amount, completed_count]
        dimensions: [status, users.country, users.city]
        segments: [completed, high_value]
        time_dimension: created_at
        granularity: day
      - name: monthly
        measures: [count]
        dimensions: [status]
        time_dimension: CUBE.created_at
        granularity: month
      - name: monthly_loose
        measures: [count]
        time_dimension: created_at
        granularity: month
        allow_non_strict_date_range_match: true
      - name: status_only
        measures: [count, total_amount]
        dimensions: [status]
      - name: by_size
        measures: [average_order_value, customers]
        dimensions: [size]
      - name: customers_yearly
        measures: [customers]
        time_dimension: created_at
        granularity: year
      - name: category_counts
        measures: [count]
        dimensions: [products.category]
      - name: revenue_by_category
        measures: [line_items.revenue, line_items.units_sold]
        dimensions: [products.category, users.country]
        time_dimension: created_at
        granularity: day
        partition_granularity: year
        refresh_key:
          every: 1 day
          incremental: true
          update_window: 30 day
        indexes:
          - name: category
            columns: [products.category]
""",
    "users": """
    pre_aggregations:
      - name: by_country
        measures: [count]
        dimensions: [country]
""",
    "line_items": """
    pre_aggregations:
      - name: by_category
        measures: [revenue, units_sold]
        dimensions: [products.category]
""",
}


def model_with_rollups(target: Path, *, source: Path = DEMO_MODEL, rollups: dict[str, str] | None = None) -> Path:
    """A copy of the model at ``source`` in ``target`` with ``rollups`` (default :data:`ROLLUPS`) appended to the
    cubes' files."""
    if target != source:
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(source, target)
    for cube, text in (ROLLUPS if rollups is None else rollups).items():
        path = target / "cubes" / f"{cube}.yml"
        path.write_text(path.read_text().rstrip("\n") + "\n" + text)
    return target


def build_rollups(deployment: Deployment) -> dict[str, Any]:
    """Build every due partition of the deployment's rollups, in this process (tests run with autocommit, so the
    queued builds run at once); the outcomes by partition id."""
    outcomes: dict[int, str] = {}

    def build(partition_id: int) -> None:
        outcomes[partition_id] = pre_aggregation_partition_build(partition_id=partition_id, serve=serve)

    pre_aggregations_refresh(deployment=deployment, serve=serve, enqueue=build)
    failed = {
        row.pre_aggregation: row.error
        for row in PreAggregationPartition.objects.filter(deployment=deployment, status="failed")
    }
    assert not failed, failed
    return outcomes


# Two count_distinct_approx measures of orders (one filtered), in the sales view too, and a day rollup of them.
APPROX_MEASURES = """
      - name: approx_customers
        sql: user_id
        type: count_distinct_approx

      - name: approx_completed_customers
        sql: user_id
        type: count_distinct_approx
        filters:
          - sql: "{CUBE}.status = 'completed'"
"""
APPROX_ROLLUPS = {
    "orders": """
    pre_aggregations:
      - name: approx_daily
        measures: [approx_customers, approx_completed_customers, count]
        dimensions: [status, users.country]
        time_dimension: created_at
        granularity: day
"""
}


def with_approx_measures(model: Path) -> Path:
    """The model at ``model`` (a copy of the demo model) with :data:`APPROX_MEASURES` in orders and the sales view."""
    orders = model / "cubes" / "orders.yml"
    text = orders.read_text()
    assert text.count("\n    measures:\n") == 1
    orders.write_text(text.replace("\n    measures:\n", "\n    measures:\n" + APPROX_MEASURES.lstrip("\n") + "\n", 1))
    sales = model / "views" / "sales.yml"
    text = sales.read_text()
    included = "\n          - average_order_value\n          - customers\n"  # the view's orders members
    assert text.count(included) == 1
    sales.write_text(text.replace(included, included + "          - approx_customers\n", 1))
    return model
