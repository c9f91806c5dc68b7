"""What a tile shows (dashboards.tiles through viewstate.compose_view): the one contract the page renders and CSV
export writes. Columns with titles and formats, a KPI's measure, a pivot table's headers and totals, render-ready
Vega-Lite with axis titles, formats and time ticks, and titles that follow the measure switch.

Pure composition: no database, no data source. Member descriptions are what the viewer's /v1/meta gives for the demo
model (the view ``sales``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from embedadmin.dashboards import tiles, viewstate
from embedadmin.dashboards.models import ReportSnapshot

MEMBERS: dict[str, dict[str, Any]] = {
    "sales.revenue": {
        "title": "Sales Revenue",
        "shortTitle": "Revenue",
        "type": "number",
        "format": {"type": "custom-numeric", "value": "$,.2~f", "alias": "currency_2"},
        "currency": "USD",
        "aggType": "sum",
    },
    "sales.order_count": {"title": "Sales Orders", "shortTitle": "Orders", "type": "number", "aggType": "count"},
    "sales.average_order_value": {
        "title": "Sales Average order value",
        "shortTitle": "Average order value",
        "type": "number",
        "aggType": "avg",
    },
    "sales.completion_rate": {
        "title": "Sales Completion rate",
        "shortTitle": "Completion rate",
        "type": "number",
        "format": "percent",
        "aggType": "number",
    },
    # As /v1/meta composed for display describes it: Cube's title and, what a person reads, its reading title.
    "sales.users_city": {
        "title": "Sales Users City",
        "shortTitle": "Users City",
        "readingTitle": "City",
        "type": "string",
    },
    "sales.status": {"title": "Sales Status", "shortTitle": "Status", "type": "string"},
    "sales.product_category": {"title": "Sales Product Category", "shortTitle": "Product Category", "type": "string"},
    "sales.created_at": {
        "title": "Sales Ordered at",
        "shortTitle": "Ordered at",
        "type": "time",
        "granularities": [{"name": "fiscal_year", "title": "Fiscal year", "interval": "1 year"}],
    },
}

CONFIG: dict[str, Any] = {
    "widgets": [
        {
            "id": "measure",
            "type": "FIELD",
            "position": {"x": 0, "y": 0, "w": 2, "h": 1},
            "config": {
                "member": "sales.revenue",
                "label": "Measure",
                "alternatives": ["sales.revenue", "sales.order_count"],
            },
        },
        {
            "id": "grain",
            "type": "TIME_GRAIN",
            "position": {"x": 2, "y": 0, "w": 2, "h": 1},
            "config": {"member": "sales.created_at", "grains": ["month", "quarter", "fiscal_year"]},
        },
    ]
}
ORDERS = viewstate.ViewState(fields={"measure": "sales.order_count"})


def _snapshot(name: str, kind: str, query: dict[str, Any], spec: dict[str, Any]) -> ReportSnapshot:
    return ReportSnapshot(name=name, title=name, kind=kind, json_query=query, spec=spec)


def _tile(
    name: str, kind: str, query: dict[str, Any], spec: dict[str, Any], state: viewstate.ViewState | None = None
) -> dict[str, Any]:
    """The composed widget of one CHART showing a report, for ``state``."""
    config = copy.deepcopy(CONFIG)
    config["widgets"].append({"id": "tile", "type": "CHART", "position": {}, "config": {"reportId": 1}})
    snapshot = _snapshot(name, kind, query, spec)
    view = viewstate.compose_view(
        config=config, snapshot_for=lambda _: snapshot, state=state or viewstate.ViewState(), members=MEMBERS
    )
    return next(w for w in view["widgets"] if w["id"] == "tile")


TOP_CITIES = {
    "measures": ["sales.order_count", "sales.revenue"],
    "dimensions": ["sales.users_city"],
    "order": {"sales.revenue": "desc"},
    "limit": 10,
}
OVER_TIME = {
    "measures": ["sales.revenue"],
    "timeDimensions": [{"dimension": "sales.created_at", "granularity": "month"}],
}
LINE = {
    "mark": "line",
    "encoding": {
        "x": {"field": "sales.created_at", "type": "temporal"},
        "y": {"field": "sales.revenue", "type": "quantitative"},
    },
}


def test_a_table_shows_its_columns_with_titles_and_formats():
    # when
    tile = _tile("Top cities", "table", TOP_CITIES, {"columns": ["sales.users_city", "sales.revenue"]})

    # then
    assert tile["spec"] == {}
    assert tile["columns"] == [
        {"member": "sales.users_city", "key": "sales.users_city", "title": "City", "type": "string"},
        {
            "member": "sales.revenue",
            "key": "sales.revenue",
            "title": "Revenue",
            "type": "number",
            "format": {"type": "custom-numeric", "value": "$,.2~f", "alias": "currency_2"},
            "currency": "USD",
            "additive": True,
        },
    ]


def test_a_table_without_columns_shows_every_column_of_its_rows_a_grouped_time_dimension_too():
    query = {**OVER_TIME, "dimensions": ["sales.status"]}

    columns = _tile("By month", "table", query, {})["columns"]

    assert [(c["key"], c["title"], c.get("granularity")) for c in columns] == [
        ("sales.status", "Status", None),
        ("sales.created_at.month", "Ordered at", "month"),
        ("sales.revenue", "Revenue", None),
    ]


def test_the_measure_switch_retitles_tiles_and_never_shows_a_column_twice():
    # given: a table that already has the alternative, switched to it
    table = _tile(
        "Top cities by revenue", "table", TOP_CITIES, {"columns": ["sales.users_city", *TOP_CITIES["measures"]]}, ORDERS
    )
    kpi = _tile("Revenue", "kpi", {"measures": ["sales.revenue"]}, {"measure": "sales.revenue"}, ORDERS)
    chart = _tile("Revenue over time", "vega", OVER_TIME, LINE, ORDERS)

    # then: the titles name the new measure
    assert (table["title"], kpi["title"], chart["title"]) == ("Top cities by orders", "Orders", "Orders over time")
    # the table asks for orders once and shows them once
    assert table["query"]["measures"] == ["sales.order_count"]
    assert table["query"]["order"] == {"sales.order_count": "desc"}
    assert [c["title"] for c in table["columns"]] == ["City", "Orders"]
    # the KPI's measure and the chart's axis follow
    assert kpi["spec"]["measure"]["key"] == "sales.order_count"
    assert kpi["spec"]["measure"]["title"] == "Orders"
    assert chart["spec"]["encoding"]["y"]["title"] == "Orders"
    assert chart["spec"]["encoding"]["y"]["field"] == "sales\\.order_count"


@pytest.mark.parametrize(
    ("title", "retitled"),
    [
        ("Revenue", "Orders"),
        ("Revenue over time", "Orders over time"),
        ("Monthly revenue", "Monthly orders"),
        ("REVENUE", "Orders"),
        ("Sales Revenue by city", "Orders by city"),  # the member's title, the view's name with it
        ("Revenues", "Revenues"),  # not the word: kept
        ("Top cities", "Top cities"),  # names no member: kept
    ],
)
def test_a_title_is_rewritten_where_it_names_the_switched_member(title, retitled):
    rewritten = tiles.switched_title(
        title,
        report_members=["sales.revenue"],
        switches={"sales.revenue": "sales.order_count"},
        members=MEMBERS,
    )
    assert rewritten == retitled


def test_a_title_of_a_report_without_the_switched_member_is_kept():
    tile = _tile("Revenue share", "kpi", {"measures": ["sales.completion_rate"]}, {}, ORDERS)
    assert tile["title"] == "Revenue share"


def test_a_kpi_shows_its_measure_column():
    tile = _tile("Completion", "kpi", {"measures": ["sales.completion_rate"]}, {"measure": "sales.completion_rate"})
    assert tile["spec"] == {
        "measure": {
            "member": "sales.completion_rate",
            "key": "sales.completion_rate",
            "title": "Completion rate",
            "type": "number",
            "format": "percent",
            "additive": False,
        }
    }
    assert tile["columns"] == [tile["spec"]["measure"]]


def test_a_chart_gets_member_titles_formats_and_tooltips_where_its_spec_sets_none():
    spec = _tile("Revenue over time", "vega", OVER_TIME, LINE)["spec"]

    x, y = spec["encoding"]["x"], spec["encoding"]["y"]
    month = {"type": "time", "granularity": "month"}
    money = {
        "type": "number",
        "format": {"type": "custom-numeric", "value": "$,.2~f", "alias": "currency_2"},
        "currency": "USD",
    }
    # axis titles are the members' titles (never the escaped field), values formatted by the page's formatter
    assert (x["title"], y["title"]) == ("Ordered at", "Revenue")
    assert (x["format"], x["formatType"]) == (month, "embedFormat")
    assert (y["format"], y["formatType"]) == (money, "embedFormat")
    # the value axis abbreviates; the time axis labels the grain and ticks on its periods
    assert y["axis"] == {"format": {**money, "abbreviate": True}, "formatType": "embedFormat"}
    assert x["axis"]["format"] == month
    assert x["axis"]["tickCount"]["expr"].startswith("{interval: 'month', step: ")
    # the time field is read as a date; the custom format types are on; the rows' points carry the tooltip
    assert spec["data"] == {"name": "table", "format": {"parse": {"sales\\.created_at\\.month": "date"}}}
    assert spec["config"] == {"customFormatTypes": True}
    assert spec["mark"] == {"type": "line", "point": {"opacity": 0, "size": 120, "tooltip": True}}


def test_what_a_reports_spec_sets_is_kept():
    spec = {
        "mark": {"type": "bar", "tooltip": False},
        "encoding": {
            "x": {"field": "sales.status", "type": "nominal", "title": None},
            "y": {"field": "sales.revenue", "type": "quantitative", "format": "$,.0f", "axis": {"title": "Money"}},
        },
    }
    query = {"measures": ["sales.revenue"], "dimensions": ["sales.status"]}

    rendered = _tile("By status", "vega", query, spec)["spec"]

    assert rendered["encoding"]["x"]["title"] is None
    assert rendered["encoding"]["y"]["format"] == "$,.0f"
    assert "formatType" not in rendered["encoding"]["y"]
    assert rendered["encoding"]["y"]["axis"] == {"title": "Money"}
    assert rendered["mark"] == {"type": "bar", "tooltip": False}
    assert rendered["data"] == {"name": "table"}


@pytest.mark.parametrize(
    ("grain", "interval", "first_step"), [("quarter", "month", 3), ("week", "week", 1), ("year", "year", 1)]
)
def test_a_time_axis_ticks_on_the_periods_of_its_grain(grain, interval, first_step):
    query = {**OVER_TIME, "timeDimensions": [{"dimension": "sales.created_at", "granularity": grain}]}

    x = _tile("Over time", "vega", query, LINE)["spec"]["encoding"]["x"]

    assert x["axis"]["format"] == {"type": "time", "granularity": grain}
    assert x["axis"]["tickCount"]["expr"].startswith(f"{{interval: '{interval}', step: ")
    assert f"<= {first_step} ? {first_step} :" in x["axis"]["tickCount"]["expr"]


def test_the_grain_control_changes_the_time_labels_of_a_chart():
    state = viewstate.ViewState(grains={"grain": "quarter"})

    spec = _tile("Revenue over time", "vega", OVER_TIME, LINE, state)["spec"]

    assert spec["encoding"]["x"]["field"] == "sales\\.created_at\\.quarter"
    assert spec["encoding"]["x"]["format"] == {"type": "time", "granularity": "quarter"}


def test_bars_per_period_leave_the_end_of_the_last_period_unlabelled():
    spec = {
        "mark": {"type": "bar"},
        "encoding": {
            "x": {"field": "sales.created_at", "type": "temporal", "timeUnit": "yearquarter"},
            "y": {"field": "sales.order_count", "type": "quantitative", "stack": "zero"},
            "color": {"field": "sales.status", "type": "nominal"},
        },
    }
    query = {
        "measures": ["sales.order_count"],
        "dimensions": ["sales.status"],
        "timeDimensions": [{"dimension": "sales.created_at", "granularity": "quarter"}],
    }

    rendered = _tile("Orders by status", "vega", query, spec)["spec"]

    assert rendered["encoding"]["x"]["axis"]["labelExpr"] == "datum.value < domain('x')[1] ? datum.label : ''"
    assert rendered["encoding"]["color"]["title"] == "Status"
    assert rendered["mark"] == {"type": "bar", "tooltip": True}


def test_a_faceted_chart_keeps_vegas_own_time_ticks():
    spec = {**LINE, "encoding": {**LINE["encoding"], "row": {"field": "sales.status", "type": "nominal"}}}
    query = {**OVER_TIME, "dimensions": ["sales.status"]}

    x = _tile("Faceted", "vega", query, spec)["spec"]["encoding"]["x"]

    assert "tickCount" not in x["axis"]
    assert x["axis"]["format"] == {"type": "time", "granularity": "month"}


PIVOT_QUERY = {
    "measures": ["sales.revenue", "sales.order_count"],
    "dimensions": ["sales.product_category"],
    "timeDimensions": [
        {"dimension": "sales.created_at", "granularity": "year", "dateRange": ["2023-01-01", "2025-12-31"]}
    ],
    "order": {"sales.product_category": "asc", "sales.created_at": "asc"},
    "limit": 100,
}
PIVOT = {"rows": ["sales.product_category"], "columns": ["sales.created_at"], "values": ["sales.revenue"]}


def test_a_pivot_table_has_row_and_column_headers_values_and_the_queries_of_its_totals():
    tile = _tile("Revenue by category and year", "pivot", PIVOT_QUERY, PIVOT)

    spec = tile["spec"]
    assert [c["title"] for c in spec["rows"]] == ["Product Category"]
    assert [(c["key"], c["title"], c["granularity"]) for c in spec["columns"]] == [
        ("sales.created_at.year", "Ordered at", "year")
    ]
    assert [(c["key"], c["currency"]) for c in spec["values"]] == [("sales.revenue", "USD")]
    # exported flat: rows, columns, values
    assert [c["key"] for c in tile["columns"]] == ["sales.product_category", "sales.created_at.year", "sales.revenue"]
    # totals are queried: by the rows only, by the columns only, by nothing; the date range stays
    totals = spec["totals"]
    assert totals["rows"] == {
        "measures": ["sales.revenue", "sales.order_count"],
        "dimensions": ["sales.product_category"],
        "timeDimensions": [{"dimension": "sales.created_at", "dateRange": ["2023-01-01", "2025-12-31"]}],
        "order": {"sales.product_category": "asc"},
        "timezone": "UTC",
    }
    assert totals["columns"] == {
        "measures": ["sales.revenue", "sales.order_count"],
        "timeDimensions": [
            {"dimension": "sales.created_at", "granularity": "year", "dateRange": ["2023-01-01", "2025-12-31"]}
        ],
        "order": {"sales.created_at": "asc"},
        "timezone": "UTC",
    }
    assert totals["grand"] == {
        "measures": ["sales.revenue", "sales.order_count"],
        "timeDimensions": [{"dimension": "sales.created_at", "dateRange": ["2023-01-01", "2025-12-31"]}],
        "timezone": "UTC",
    }


def test_a_pivot_follows_the_measure_switch_without_naming_a_value_twice():
    spec = {**PIVOT, "values": ["sales.revenue", "sales.order_count"]}

    tile = _tile("Revenue by category and year", "pivot", PIVOT_QUERY, spec, ORDERS)

    assert [c["title"] for c in tile["spec"]["values"]] == ["Orders"]
    assert tile["title"] == "Orders by category and year"


def test_controls_offer_titles_the_model_gives():
    config = copy.deepcopy(CONFIG)
    view = viewstate.compose_view(
        config=config, snapshot_for=lambda _: None, state=viewstate.ViewState(), members=MEMBERS
    )
    measure, grain = view["controls"]
    assert measure["alternatives"] == [
        {"member": "sales.revenue", "title": "Revenue"},
        {"member": "sales.order_count", "title": "Orders"},
    ]
    assert grain["label"] == "Ordered at"
    assert grain["grains"] == [
        {"name": "month", "title": "Month"},
        {"name": "quarter", "title": "Quarter"},
        {"name": "fiscal_year", "title": "Fiscal year"},
    ]


def test_a_member_the_viewer_is_not_described_is_named_from_its_name():
    column = tiles.tile_column("sales.order_count", query={"measures": ["sales.order_count"]}, members={})
    assert column == {
        "member": "sales.order_count",
        "key": "sales.order_count",
        "title": "Order count",
        "type": "number",
        "additive": False,
    }
