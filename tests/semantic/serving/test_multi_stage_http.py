"""Multi-stage measures through /v1/load on the demo dataset (DuckDB), compared with SQL written by hand: a share of
the total per status, and each month's revenue beside the same month a year before."""

# ruff: noqa: F811  (the fixtures imported from http_support are redefined as test arguments, as pytest wants)

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from embedadmin.accounts.services import deployment_configure, duckdb_url
from tests.semantic.http_support import CoreApi, demo_duckdb, duck_rows, fresh_semantic_state  # noqa: F401

MODEL = """
cubes:
  - name: order_stats
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
      - name: revenue_total
        multi_stage: true
        sql: "{revenue}"
        type: sum
        group_by: []
      - name: revenue_share
        multi_stage: true
        sql: "100.0 * {revenue} / NULLIF({revenue_total}, 0)"
        type: number
      - name: revenue_prior_year
        multi_stage: true
        sql: "{revenue}"
        type: number
        time_shift:
          - interval: 1 year
            type: prior
"""


@pytest.fixture
def stats(api, acme, demo_duckdb, tmp_path: Path, fresh_semantic_state) -> CoreApi:
    model = tmp_path / "model"
    (model / "cubes").mkdir(parents=True)
    (model / "cubes" / "order_stats.yml").write_text(MODEL.lstrip("\n"))
    deployment_configure(deployment=acme.deployment, model_dir=str(model), data_source_url=duckdb_url(demo_duckdb))
    return CoreApi(client=api, cast=acme, dataset=demo_duckdb)


def rounded(value: object) -> Decimal | None:
    return None if value is None else round(Decimal(str(value)), 6)


def test_each_statuss_share_of_all_revenue(stats: CoreApi) -> None:
    body = stats.load({"measures": ["order_stats.revenue_share"], "dimensions": ["order_stats.status"]})

    got = sorted((r["order_stats.status"], rounded(r["order_stats.revenue_share"])) for r in body["data"])
    want = duck_rows(
        stats.dataset,
        "SELECT status, 100.0 * SUM(amount) / (SELECT SUM(amount) FROM orders) FROM orders GROUP BY 1 ORDER BY 1",
    )
    assert got == [(status, rounded(share)) for status, share in want]


def test_each_months_revenue_beside_the_same_month_a_year_before(stats: CoreApi) -> None:
    body = stats.load(
        {
            "measures": ["order_stats.revenue", "order_stats.revenue_prior_year"],
            "timeDimensions": [
                {
                    "dimension": "order_stats.created_at",
                    "granularity": "month",
                    "dateRange": ["2024-01-01", "2024-12-31"],
                }
            ],
            "order": {"order_stats.created_at": "asc"},
        }
    )

    got = [
        (
            r["order_stats.created_at.month"][:10],
            rounded(r["order_stats.revenue"]),
            rounded(r["order_stats.revenue_prior_year"]),
        )
        for r in body["data"]
    ]
    want = duck_rows(
        stats.dataset,
        """
        WITH m AS (SELECT date_trunc('month', created_at) AS month, SUM(amount) AS revenue FROM orders GROUP BY 1)
        SELECT strftime(cur.month, '%Y-%m-%d'), cur.revenue, prev.revenue
        FROM m cur LEFT JOIN m prev ON prev.month = cur.month - INTERVAL 1 YEAR
        WHERE cur.month >= '2024-01-01' AND cur.month < '2025-01-01' ORDER BY 1
        """,
    )
    assert len(got) == 12
    assert got == [(month, rounded(revenue), rounded(prior)) for month, revenue, prior in want]
