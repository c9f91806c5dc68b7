"""Every query shape the cross-database tests run, rendered for Trino, Snowflake, BigQuery and Databricks and compared
with the committed SQL in ``snapshots/<dialect>/<shape>.sql``; each statement must parse back in that dialect.

No warehouse runs here, so these snapshots are what a reviewer who knows each warehouse reads: quoting, parameter
markers the driver binds, time zone conversion, truncation, intervals. After a deliberate change to the compiler or a
writer, rewrite them with ``UPDATE_SQL_SNAPSHOTS=1`` and read the diff.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
import sqlglot

from embedadmin.semantic import QueryContext, load_model, plan_queries
from tests.semantic.conftest import FIXTURES, NOW, shop_model
from tests.semantic.http_support import DEMO_MODEL
from tests.semantic.sql.test_cross_database import CASES
from tests.semantic.sql.test_filters import OPERATORS
from tests.semantic.sql.test_time import BERLIN

SNAPSHOTS = Path(__file__).parent / "snapshots"
DIALECTS = ("trino", "snowflake", "bigquery", "databricks")
UPDATE = os.environ.get("UPDATE_SQL_SNAPSHOTS", "") not in ("", "0", "false")
YEAR_2024 = ["2024-01-01", "2024-12-31"]
GERMANY = QueryContext(security_context={"country": "DE"})


def _shop(query: dict[str, Any], ctx: QueryContext | None = None) -> tuple[str, dict[str, Any], QueryContext | None]:
    return ("shop", query, ctx)


SHAPES: dict[str, tuple[str, dict[str, Any], QueryContext | None]] = {
    "measures-by-status": _shop(
        {
            "measures": ["orders.count", "orders.revenue", "orders.average_amount", "orders.customers"],
            "dimensions": ["orders.status"],
            "order": {"orders.count": "desc", "orders.status": "asc"},
            "limit": 3,
            "offset": 1,
            "total": True,
        }
    ),
    "composite-and-filtered-measures": _shop(
        {"measures": ["orders.completed_share", "orders.completed_count", "orders.max_amount", "orders.min_created"]}
    ),
    "join-line-items-products": _shop(
        {"measures": ["line_items.total", "line_items.quantity"], "dimensions": ["products.category"]}
    ),
    "sub-query-dimension": _shop({"measures": ["orders.count"], "dimensions": ["orders.big_basket"]}),
    "case-dimension-and-segments": _shop(
        {"measures": ["users.count"], "dimensions": ["users.tier"], "segments": ["users.german"]}
    ),
    "segment-from-jinja": _shop({"measures": ["orders.count"], "segments": ["orders.finished"]}),
    "ungrouped": _shop(
        {
            "dimensions": ["orders.status", "orders.amount"],
            "measures": ["orders.count"],
            "filters": [{"member": "orders.amount", "operator": "gte", "values": ["50"]}],
            "order": {"orders.amount": "asc"},
            "ungrouped": True,
            "limit": 5,
        }
    ),
    "view-with-row-policy": _shop(
        {"measures": ["orders_view.count", "orders_view.revenue"], "dimensions": ["orders_view.users_city"]},
        GERMANY,
    ),
    "rolling-windows-by-month": _shop(
        {
            "measures": [
                "orders.revenue_7d",
                "orders.running_count",
                "orders.revenue_ytd",
                "orders.next_month_revenue",
            ],
            "timeDimensions": [{"dimension": "orders.created_at", "granularity": "month", "dateRange": YEAR_2024}],
            "timezone": "Europe/Berlin",
        }
    ),
    "filter-and-or-groups": _shop(
        {
            "measures": ["orders.count"],
            "filters": [
                {
                    "or": [
                        {"member": "orders.status", "operator": "equals", "values": ["shipped"]},
                        {
                            "and": [
                                {"member": "orders.amount", "operator": "gt", "values": ["20"]},
                                {"member": "users.country", "operator": "notEquals", "values": ["US"]},
                            ]
                        },
                    ]
                }
            ],
        }
    ),
    "measure-filter-having": _shop(
        {
            "measures": ["orders.count"],
            "dimensions": ["orders.status"],
            "filters": [{"member": "orders.count", "operator": "gte", "values": ["2"]}],
        }
    ),
}
for _granularity in BERLIN:
    SHAPES[f"granularity-{_granularity}-berlin"] = _shop(
        {
            "measures": ["orders.count"],
            "timeDimensions": [
                {
                    "dimension": "orders.created_at",
                    "granularity": _granularity,
                    "dateRange": ["2024-03-01", "2024-11-30"],
                }
            ],
            "timezone": "Europe/Berlin",
        }
    )
for _name, _filters, _ in OPERATORS:
    SHAPES[f"filter-{re.sub(r'[^a-z0-9]+', '-', _name.lower()).strip('-')}"] = _shop(
        {
            "dimensions": ["orders.amount"],
            "measures": ["orders.count"],
            "filters": _filters,
            "timezone": "America/New_York",
            "ungrouped": True,
            "order": {"orders.amount": "asc"},
        }
    )
for _name, _case in CASES.items():
    _claims = _case.claims or {}
    SHAPES[f"demo-{_name}"] = (
        "demo",
        _case.query,
        QueryContext(groups=_claims.get("groups", []), user_attributes=_claims.get("userAttributes", {})),
    )
SHAPES.update(
    {
        "multi-stage-share": (
            "multi_stage",
            {"dimensions": ["orders.status"], "measures": ["orders.revenue_share"]},
            None,
        ),
        "multi-stage-group-and-reduce-by": (
            "multi_stage",
            {
                "dimensions": ["orders.status", "users.country"],
                "measures": ["orders.status_revenue", "orders.revenue_without_status"],
            },
            None,
        ),
        "time-shift-prior-month": (
            "multi_stage",
            {
                "measures": ["orders.revenue", "orders.revenue_prior_month"],
                "timeDimensions": [{"dimension": "orders.created_at", "granularity": "month", "dateRange": YEAR_2024}],
            },
            None,
        ),
        "time-shift-calendar": (
            "multi_stage",
            {
                "measures": ["orders.revenue", "orders.revenue_retail_prior"],
                "timeDimensions": [{"dimension": "retail_calendar.date", "granularity": "day", "dateRange": YEAR_2024}],
            },
            None,
        ),
        "count-distinct-approx": ("catalog", {"measures": ["items.distinct_skus"]}, None),
    }
)


def _model(name: str, dialect: str) -> Any:
    if name == "shop":
        return shop_model(dialect)
    folder = DEMO_MODEL if name == "demo" else FIXTURES / name
    return load_model(folder, dialect=dialect, check_interval=0).require()


def render(dialect: str, shape: str) -> str:
    """The statements a shape sends to ``dialect``'s warehouse, with their parameters, as the snapshot holds them."""
    model_name, query, ctx = SHAPES[shape]
    plan = plan_queries(_model(model_name, dialect), query, ctx or QueryContext(), now=NOW)
    lines = [f"-- {shape}: {len(plan.queries)} statement(s)"]
    for compiled in plan.queries:
        lines.append(f"-- parameters: {list(compiled.params)!r}")
        lines.append(compiled.sql + ";")
        if compiled.total_sql:
            lines.append("-- total (same parameters)")
            lines.append(compiled.total_sql + ";")
    return "\n".join(lines) + "\n"


def statements(text: str) -> list[str]:
    return [line.rstrip(";") for line in text.splitlines() if line and not line.startswith("--")]


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("dialect", DIALECTS)
def test_query_shape_renders_as_its_snapshot(dialect: str, shape: str) -> None:
    # given
    path = SNAPSHOTS / dialect / f"{shape}.sql"

    # when
    text = render(dialect, shape)

    # then
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no snapshot {path}: run with UPDATE_SQL_SNAPSHOTS=1 and review it"
    assert text == path.read_text(), f"{dialect} SQL of {shape} changed: UPDATE_SQL_SNAPSHOTS=1 rewrites it"
    for sql in statements(text):
        sqlglot.parse_one(sql, read=dialect)  # valid SQL of that dialect (raises ParseError otherwise)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_snapshot_is_a_known_shape(dialect: str) -> None:
    """A snapshot left behind by a renamed shape is not read by any test: it must go."""
    found = {path.stem for path in (SNAPSHOTS / dialect).glob("*.sql")}
    assert found == set(SHAPES)
