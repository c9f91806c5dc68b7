"""CSV export writes a tile's columns exactly as the page shows them (dashboards.tiles): the same columns in the same
order with the same titles, for every kind of tile (a table, a KPI, a chart, a pivot table exported flat), following
the measure switch; the values are the rows the viewer's token reads through the Core Data API."""

# ruff: noqa: F401, F811
from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest

from embedadmin.dashboards.models import DashboardVersion, Report, ReportSnapshot
from tests.embedding.conftest import generate, new_session, tenant_attribute, tenant_group
from tests.embedding.dashboard_support import bootstrap_of, embed_headers, page_url, published_dashboard
from tests.semantic.http_support import core, demo_duckdb, duck_rows, fresh_semantic_state

pytestmark = [pytest.mark.postgres]

EXPORT = "/api/v1/embed/dashboard/SalesOverv01/export"
VIEW = "/api/v1/embed/dashboard/SalesOverv01/view"
# The tiles added to the published dashboard of tests/embedding/dashboard_support.py: name, kind, query, spec.
TILES: dict[str, tuple[str, str, dict[str, Any], dict[str, Any]]] = {
    "orders-kpi": ("Orders", "kpi", {"measures": ["sales.order_count"]}, {"measure": "sales.order_count"}),
    "by-status": (
        "Order value by status",
        "vega",
        {"measures": ["sales.total_amount"], "dimensions": ["sales.status"]},
        {
            "mark": "bar",
            "encoding": {
                "x": {"field": "sales.status", "type": "nominal"},
                "y": {"field": "sales.total_amount", "type": "quantitative"},
            },
        },
    ),
    "pivot": (
        "Order value by status and year",
        "pivot",
        {
            "measures": ["sales.total_amount", "sales.order_count"],
            "dimensions": ["sales.status"],
            "timeDimensions": [{"dimension": "sales.created_at", "granularity": "year"}],
            "order": {"sales.status": "asc", "sales.created_at": "asc"},
        },
        {"rows": ["sales.status"], "columns": ["sales.created_at"], "values": ["sales.total_amount"]},
    ),
}


@pytest.fixture
def page(api, core, new_session, tenant_attribute, tenant_group) -> dict[str, Any]:
    """The dashboard with the tiles above, opened with export allowed by a regional viewer of the biggest country."""
    dashboard = published_dashboard(core.cast)
    version = DashboardVersion.objects.get(dashboard=dashboard)
    config = version.config
    for index, (widget_id, (name, kind, query, spec)) in enumerate(TILES.items()):
        report = Report.objects.create(
            account=core.cast.account,
            deployment=core.cast.deployment,
            workbook=dashboard.workbook,
            public_id=f"ExportTile{index:02d}",
            name=name,
            json_query=json.dumps(query),
            meta={"visualization": {"kind": kind, **spec}},
        )
        ReportSnapshot.objects.create(
            version=version,
            report=report,
            report_public_id=report.public_id,
            report_version=1,
            name=name,
            title=name,
            kind=kind,
            spec=spec,
            json_query=query,
        )
        position = {"x": 0, "y": 8 + 4 * index, "w": 6, "h": 4}
        config["widgets"].append(
            {"id": widget_id, "type": "CHART", "position": position, "config": {"reportId": report.pk}}
        )
    version.save(update_fields=["config"])
    tenant_attribute(core.cast, "country", "string")
    tenant_group(core.cast, "regional")
    [(country,)] = duck_rows(core.dataset, "SELECT country FROM users GROUP BY country ORDER BY count(*) DESC LIMIT 1")
    session_id = new_session(
        core.cast,
        externalId="rita",
        embedTenantName="tenant-a",
        groups=["regional"],
        userAttributes=[{"name": "country", "value": country}],
        settings={"allowExport": True},
    )
    response = api.get(page_url("SalesOverv01", session_id))
    assert response.status_code == 200, response.content
    return bootstrap_of(response)


def _export(api, page: dict[str, Any], widget_id: str, state: dict[str, Any] | None = None) -> list[list[str]]:
    body = {"grant": page["grant"], "widgetId": widget_id, "format": "csv", **({"state": state} if state else {})}
    response = api.post_json(EXPORT, body, **embed_headers(page["token"]))
    assert response.status_code == 200, response.content
    return list(csv.reader(io.StringIO(response.content.decode())))


def _view(api, page: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    response = api.post_json(VIEW, {"grant": page["grant"], "state": state}, **embed_headers(page["token"]))
    assert response.status_code == 200, response.content
    return response.json()


def _rows(api, page: dict[str, Any], widget: dict[str, Any]) -> list[list[str]]:
    """The tile's rows as the page loads them, as the CSV writes them (by its columns' keys)."""
    response = api.post_json(
        f"{page['coreApiBase']}/load", {"query": widget["query"]}, HTTP_AUTHORIZATION=page["token"]
    )
    assert response.status_code == 200, response.content
    keys = [column["key"] for column in widget["columns"]]
    return [["" if row.get(key) is None else str(row[key]) for key in keys] for row in response.json()["data"]]


@pytest.mark.parametrize("widget_id", ["by-country", "orders-kpi", "by-status", "pivot"])
def test_a_tiles_csv_has_the_columns_the_page_shows(api, page, widget_id):
    # given: the tile as the page renders it
    widget = next(w for w in page["view"]["widgets"] if w["id"] == widget_id)

    # when
    rows = _export(api, page, widget_id)

    # then: its columns' titles, in its order, and the rows the viewer's token reads
    assert rows[0] == [column["title"] for column in widget["columns"]]
    assert rows[1:] == _rows(api, page, widget)
    assert len(rows) > 1


def test_a_pivot_table_is_exported_flat_rows_then_columns_then_values(api, page):
    rows = _export(api, page, "pivot")

    assert rows[0] == ["Status", "Ordered at", "Order value"]
    assert {row[1][:4] for row in rows[1:]} <= {"2023", "2024", "2025"}


def test_the_csv_follows_the_measure_switch(api, page):
    # given: the measure switched to orders
    state = {"fields": {"measure": "sales.order_count"}}
    switched = next(w for w in _view(api, page, state)["widgets"] if w["id"] == "by-country")

    # when
    rows = _export(api, page, "by-country", state)

    # then
    assert rows[0] == [column["title"] for column in switched["columns"]] == ["Country", "Orders"]
    assert rows[1:] == _rows(api, page, switched)
