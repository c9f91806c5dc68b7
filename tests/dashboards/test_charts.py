"""Chart types -> a report's visualization (``dashboards/charts.py``), the pivot kind's validation, and the one table of
filter operators by member type that the draft validation and the report builder share."""

from __future__ import annotations

import pytest

from embedadmin.core.errors import BadRequest
from embedadmin.dashboards import validation
from embedadmin.dashboards.charts import CHART_TYPE_NAMES, chart_type_of, chart_visualization, query_shape
from embedadmin.dashboards.models import ReportSnapshot
from embedadmin.semantic.modeling.model import DATE_OPERATORS, FILTER_OPERATORS, OPERATORS_BY_TYPE
from embedadmin.semantic.modeling.registry import load_model
from tests.dashboards.support import DEMO_MODEL, base, create_report, create_workbook, ok, publish, set_draft

BY_MONTH = {
    "measures": ["sales.total_amount"],
    "timeDimensions": [{"dimension": "sales.created_at", "granularity": "month", "dateRange": "last 12 months"}],
}
BY_CATEGORY = {"measures": ["sales.revenue", "sales.units_sold"], "dimensions": ["sales.product_category"]}
BY_MONTH_AND_STATUS = {
    "measures": ["sales.order_count"],
    "dimensions": ["sales.status"],
    "timeDimensions": [{"dimension": "sales.created_at", "granularity": "quarter"}],
    "order": {"sales.created_at": "asc"},
}
QUERIES = [BY_MONTH, BY_CATEGORY, BY_MONTH_AND_STATUS]


@pytest.fixture(scope="module")
def model():
    return load_model(DEMO_MODEL, dialect="duckdb").require()


def made(query, chart_type):
    return chart_visualization(query=query, chart_type=chart_type).visualization


# --- what each chart type writes ---------------------------------------------------------------------------


def test_a_line_over_time_puts_the_time_dimension_along_x_and_the_measure_up_y():
    assert made(BY_MONTH, "line") == {
        "kind": "vega",
        "spec": {
            "mark": {"type": "line", "point": False},
            "encoding": {
                "x": {"field": "sales.created_at", "type": "temporal"},
                "y": {"field": "sales.total_amount", "type": "quantitative"},
            },
        },
    }


def test_an_area_by_quarter_and_status_colours_one_series_per_status():
    assert made(BY_MONTH_AND_STATUS, "area") == {
        "kind": "vega",
        "spec": {
            "mark": {"type": "area", "line": True, "fillOpacity": 0.3},
            "encoding": {
                "x": {"field": "sales.created_at", "type": "temporal"},
                "y": {"field": "sales.order_count", "type": "quantitative"},
                "color": {"field": "sales.status", "type": "nominal"},
            },
        },
    }


def test_bars_of_categories_are_sorted_biggest_first_unless_the_query_sets_an_order():
    vertical = made(BY_CATEGORY, "bar")["spec"]
    horizontal = made(BY_CATEGORY, "bar_horizontal")["spec"]
    ordered = made({**BY_CATEGORY, "order": {"sales.revenue": "asc"}}, "bar")["spec"]

    assert vertical == {
        "mark": {"type": "bar"},
        "encoding": {
            "x": {"field": "sales.product_category", "type": "nominal", "sort": "-y"},
            "y": {"field": "sales.revenue", "type": "quantitative"},
        },
    }
    assert horizontal["encoding"] == {
        "y": {"field": "sales.product_category", "type": "nominal", "sort": "-x"},
        "x": {"field": "sales.revenue", "type": "quantitative"},
    }
    assert ordered["encoding"]["x"]["sort"] is None  # the rows' own order


def test_bars_over_time_are_one_bar_per_period_and_grouped_or_stacked_by_the_second_dimension():
    grouped = made(BY_MONTH_AND_STATUS, "bar")["spec"]["encoding"]
    stacked = made(BY_MONTH_AND_STATUS, "bar_stacked")["spec"]["encoding"]
    stacked_across = made(BY_MONTH_AND_STATUS, "bar_horizontal_stacked")["spec"]["encoding"]

    assert grouped == {
        "x": {"field": "sales.created_at", "type": "temporal", "timeUnit": "yearquarter"},
        "y": {"field": "sales.order_count", "type": "quantitative"},
        "color": {"field": "sales.status", "type": "nominal"},
        "xOffset": {"field": "sales.status", "type": "nominal"},
    }
    assert stacked == {
        "x": {"field": "sales.created_at", "type": "temporal", "timeUnit": "yearquarter"},
        "y": {"field": "sales.order_count", "type": "quantitative", "stack": "zero"},
        "color": {"field": "sales.status", "type": "nominal"},
    }
    assert stacked_across["x"] == {"field": "sales.order_count", "type": "quantitative", "stack": "zero"}
    assert stacked_across["y"]["timeUnit"] == "yearquarter"


def test_a_custom_granularity_is_an_ordinal_axis():
    query = {
        "measures": ["sales.order_count"],
        "timeDimensions": [{"dimension": "sales.created_at", "granularity": "fiscal_quarter"}],
    }
    assert made(query, "bar")["spec"]["encoding"]["x"] == {"field": "sales.created_at", "type": "ordinal"}


def test_pie_and_donut_are_arcs_of_the_measure_coloured_by_the_dimension():
    pie = made(BY_CATEGORY, "pie")["spec"]
    donut = made(BY_CATEGORY, "donut")["spec"]

    assert pie == {
        "mark": {"type": "arc"},
        "encoding": {
            "theta": {"field": "sales.revenue", "type": "quantitative", "stack": True},
            "color": {"field": "sales.product_category", "type": "nominal"},
        },
    }
    assert donut["mark"] == {"type": "arc", "innerRadius": {"expr": "min(width, height) / 4"}}
    assert donut["encoding"] == pie["encoding"]


def test_kpi_table_and_pivot_are_their_own_kinds():
    assert made(BY_CATEGORY, "kpi") == {"kind": "kpi", "measure": "sales.revenue"}
    assert made(BY_MONTH_AND_STATUS, "table") == {
        "kind": "table",
        "columns": ["sales.created_at", "sales.status", "sales.order_count"],
    }
    assert made(BY_MONTH_AND_STATUS, "pivot") == {
        "kind": "pivot",
        "rows": ["sales.created_at"],
        "columns": ["sales.status"],
        "values": ["sales.order_count"],
    }


def test_notes_say_what_a_chart_does_not_draw():
    titles = {"sales.revenue": "Revenue", "sales.units_sold": "Units sold"}
    spec = chart_visualization(query=BY_CATEGORY, chart_type="line", title_of=lambda name: titles.get(name, name))
    nothing_to_stack = chart_visualization(query=BY_MONTH, chart_type="bar_stacked")

    assert spec.notes == (
        "This chart draws Revenue; the other measures are not drawn (a table or a pivot table shows them all).",
    )
    assert nothing_to_stack.notes == (
        "Nothing to stack by: add a second dimension (or a time dimension and a dimension).",
    )
    assert chart_visualization(query=BY_MONTH, chart_type="line").notes == ()
    pie = chart_visualization(query=BY_MONTH_AND_STATUS, chart_type="pie", title_of=lambda name: name.split(".")[1])
    assert pie.notes == (
        "A pie has a slice per row, and the rows are split by status too: keep one dimension for one slice per "
        "created_at.",
    )
    three = {**BY_MONTH_AND_STATUS, "dimensions": ["sales.status", "sales.size"]}
    assert chart_visualization(query=three, chart_type="bar", title_of=lambda name: name.split(".")[1]).notes == (
        "Not drawn: size (a table shows every dimension).",
    )


@pytest.mark.parametrize(
    ("query", "chart_type", "message"),
    [
        (BY_MONTH, "scatter", "chartType: must be one of kpi, line, area"),
        ({"dimensions": ["sales.status"]}, "kpi", "chartType: a KPI (one number) chart needs a measure"),
        ({"dimensions": ["sales.status"]}, "pie", "chartType: a Pie chart needs a measure"),
        ({"measures": ["sales.order_count"]}, "line", "chartType: a Line chart needs a time dimension"),
        ({}, "table", "chartType: a table needs a measure or a dimension"),
    ],
)
def test_a_chart_that_cannot_draw_the_query_says_why(query, chart_type, message):
    with pytest.raises(BadRequest) as refused:
        chart_visualization(query=query, chart_type=chart_type)
    assert str(refused.value).startswith(message)


def test_a_time_dimension_without_granularity_is_a_range_not_a_category():
    shape = query_shape(
        {"measures": ["sales.order_count"], "timeDimensions": [{"dimension": "sales.created_at", "dateRange": "today"}]}
    )
    assert shape.categories == ()
    assert made({"measures": ["sales.order_count"]}, "kpi") == {"kind": "kpi", "measure": "sales.order_count"}


# --- what is written passes the one validation ------------------------------------------------------------------


@pytest.mark.parametrize("chart_type", CHART_TYPE_NAMES)
@pytest.mark.parametrize("query", QUERIES, ids=["by-month", "by-category", "by-quarter-and-status"])
def test_every_chart_of_every_query_passes_report_validation(model, query, chart_type):
    visualization = made(query, chart_type)
    parsed = validation.query_parse(model=model, json_query=query)

    checked = validation.visualization_parse(meta={"visualization": visualization}, parsed=parsed)

    assert checked.kind == visualization["kind"]


@pytest.mark.parametrize("chart_type", CHART_TYPE_NAMES)
def test_a_saved_chart_opens_as_its_chart_type(chart_type):
    query = BY_MONTH_AND_STATUS
    assert chart_type_of(visualization=made(query, chart_type), query=query).chart_type == chart_type
    assert chart_type_of(visualization=made(query, chart_type), query=query).exact


def test_a_hand_written_spec_opens_as_the_nearest_chart_type_and_is_not_exact():
    hand_written = {
        "kind": "vega",
        "spec": {
            "mark": {"type": "area", "line": True, "opacity": 0.25},
            "encoding": {
                "x": {"field": "sales.created_at", "type": "temporal", "title": None},
                "y": {"field": "sales.total_amount", "type": "quantitative", "title": None},
            },
        },
    }
    horizontal = {"kind": "vega", "spec": {"mark": "bar", "encoding": {"x": {"type": "quantitative"}}}}

    guess = chart_type_of(visualization=hand_written, query=BY_MONTH)
    assert (guess.chart_type, guess.exact) == ("area", False)
    assert chart_type_of(visualization=horizontal, query=BY_MONTH).chart_type == "bar_horizontal"
    assert chart_type_of(visualization={"kind": "text", "text": "hi"}, query={}).chart_type == "table"


# --- pivot -----------------------------------------------------------------------------------------------------


def pivot_check(model, query, **settings):
    parsed = validation.query_parse(model=model, json_query=query)
    return validation.visualization_parse(meta={"visualization": {"kind": "pivot", **settings}}, parsed=parsed)


def test_a_pivot_of_the_query_members_is_accepted_as_given(model):
    checked = pivot_check(
        model,
        BY_MONTH_AND_STATUS,
        rows=["sales.created_at"],
        columns=["sales.status"],
        values=["sales.order_count"],
    )
    assert (checked.kind, checked.spec) == (
        "pivot",
        {"rows": ["sales.created_at"], "columns": ["sales.status"], "values": ["sales.order_count"]},
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"rows": ["sales.users_country"], "values": ["sales.order_count"]}, "rows: 'sales.users_country' is not a"),
        ({"rows": ["sales.order_count"], "values": ["sales.order_count"]}, "rows: 'sales.order_count' is a measure"),
        ({"columns": ["sales.status"], "values": ["sales.status"]}, "values: 'sales.status' is not a measure"),
        ({"rows": ["sales.status"], "values": []}, "values: a pivot table needs at least one measure"),
        ({"rows": ["sales.status"], "columns": ["sales.status"], "values": ["sales.order_count"]}, "in both rows"),
        ({"rows": "sales.status", "values": ["sales.order_count"]}, "rows: must be a list of member names"),
        ({"values": ["sales.order_count", "sales.order_count"]}, "values: names a member twice"),
        ({"values": ["sales.order_count"], "spec": {}}, "unknown keys for kind pivot: spec"),
    ],
)
def test_a_pivot_naming_what_the_query_does_not_have_is_refused(model, settings, message):
    with pytest.raises(BadRequest) as refused:
        pivot_check(model, BY_MONTH_AND_STATUS, **settings)
    assert message in str(refused.value)
    assert str(refused.value).startswith("meta.visualization")


def test_the_platform_api_writes_and_publishes_a_pivot_report(api, modelled):
    pivot = made(BY_MONTH_AND_STATUS, "pivot")
    report = create_report(api, modelled, jsonQuery=BY_MONTH_AND_STATUS, meta={"visualization": pivot})
    workbook = create_workbook(api, modelled)
    chart = {"id": "pivot", "type": "CHART", "position": {"x": 0, "y": 0, "w": 6, "h": 4}}
    ok(set_draft(api, modelled, workbook["id"], {"widgets": [{**chart, "config": {"reportId": report["id"]}}]}))

    ok(publish(api, modelled, workbook["id"]))

    snapshot = ReportSnapshot.objects.get(report_id=report["id"])
    assert (snapshot.kind, snapshot.spec) == ("pivot", {k: v for k, v in pivot.items() if k != "kind"})
    read = ok(api.get(f"{base(modelled)}/reports/{report['id']}", **modelled.platform_headers))
    assert read["meta"] == {"visualization": pivot}


# --- one table of operators ------------------------------------------------------------------------------------


def test_the_draft_validation_takes_its_operators_from_the_semantic_layer(model):
    members = model.members
    assert validation.control_operators(members["sales.status"]) is OPERATORS_BY_TYPE["string"]
    assert validation.control_operators(members["sales.total_amount"]) is OPERATORS_BY_TYPE["number"]
    assert validation.control_operators(members["sales.created_at"]) == ("inDateRange",)  # a date range control
    every = {op for ops in OPERATORS_BY_TYPE.values() for op in ops}
    assert every <= set(FILTER_OPERATORS)
    assert set(OPERATORS_BY_TYPE["time"]) - {"set", "notSet"} == DATE_OPERATORS
