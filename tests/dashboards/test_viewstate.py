"""The page URL's grammar and the composition of tile queries and specs (dashboards.viewstate)."""

from __future__ import annotations

import json

import pytest

from embedadmin.dashboards import tiles, viewstate
from embedadmin.semantic.query.dates import date_range_presets
from tests.embedding.dashboard_support import CONFIG, LINE_SPEC, REVENUE_QUERY


def _url(**params: str) -> viewstate.UrlView:
    return viewstate.parse_url(CONFIG, list(params.items()), timezone="UTC")


def _f(member: str, value: object) -> tuple[str, str]:
    return f"f_{member}", json.dumps(value)


@pytest.mark.parametrize(
    ("value", "let_through"),
    [(None, True), ("true", True), ("1", True), ("False", True), ("", True), ("false", False)],
)
def test_allow_export_in_the_url_only_the_literal_false_narrows(value, let_through):
    # The URL cannot allow export (the session's signed allowExport does); it can only turn it off.
    flags = (_url(allowExport=value) if value is not None else _url()).flags
    assert flags["allowExport"] is let_through


@pytest.mark.parametrize(
    ("params", "header", "title", "menu"),
    [
        ({}, True, True, True),
        ({"showDashboardTitle": "false"}, True, False, True),
        ({"showDashboardTitle": "False"}, True, True, True),
        ({"showDashboardTitle": "0"}, True, True, True),
        ({"showDashboardExportMenu": "false"}, True, True, False),
        ({"showDashboardHeader": "false"}, False, False, False),  # the header hides the rest
        ({"showDashboardHeader": "false", "showDashboardTitle": "true"}, False, False, False),
        ({"showDashboardHeader": "FALSE"}, True, True, True),
    ],
)
def test_show_flags_only_the_literal_false_hides(params, header, title, menu):
    flags = _url(**params).flags
    assert (flags["showDashboardHeader"], flags["showDashboardTitle"], flags["showDashboardExportMenu"]) == (
        header,
        title,
        menu,
    )


@pytest.mark.parametrize(
    ("params", "locale", "timezone"),
    [
        ({"locale": "es-MX", "timezone": "America/New_York"}, "es-MX", "America/New_York"),
        ({"timezone": "+05:30"}, None, None),  # unusable: falls through to the session's
        ({"timezone": "Not/AZone", "locale": "??"}, None, None),
        ({"locale": "es"}, "es", None),
    ],
)
def test_locale_and_timezone_override_only_when_usable(params, locale, timezone):
    url = _url(**params)
    assert (url.locale, url.timezone) == (locale, timezone)
    assert url.state.timezone == (timezone or "UTC")


@pytest.mark.parametrize(
    ("param", "filters"),
    [
        (_f("sales.users_country", {"value": "France"}), {"country": {"operator": "equals", "values": ["France"]}}),
        (
            _f("sales.users_country", {"values": ["France", "Spain"], "operator": "notEquals"}),
            {"country": {"operator": "notEquals", "values": ["France", "Spain"]}},
        ),
        (_f("sales.users_country", {"value": "France", "operator": "contains"}), {}),  # not an operator it offers
        (_f("sales.users_city", {"value": "Paris"}), {}),  # no control names the member: ignored
        (("f_sales.users_country", "{not json"), {}),
        (
            ("f_sales.users_country", "%7B%22value%22%3A%22France%22%7D"),
            {"country": {"operator": "equals", "values": ["France"]}},
        ),
        (_f("sales.users_country", {"values": []}), {}),
        (_f("sales.users_country", {"value": {"nested": 1}}), {}),
        (
            _f("sales.created_at", {"value": "last 12 months"}),
            {"period": {"operator": "inDateRange", "values": ["last 12 months"]}},
        ),
        (
            _f("sales.created_at", {"values": ["2024-01-01", "2024-03-31"]}),
            {"period": {"operator": "inDateRange", "values": ["2024-01-01", "2024-03-31"]}},
        ),
        (_f("sales.created_at", {"values": ["a", "b", "c"]}), {}),
    ],
)
def test_f_parameters_apply_only_through_a_filter_control(param, filters):
    state = viewstate.parse_url(CONFIG, [param], timezone="UTC").state
    assert {cid: value.as_dict() for cid, value in state.filters.items()} == filters


@pytest.mark.parametrize(
    ("params", "grains", "fields"),
    [
        ({"tg_sales.created_at": "quarter"}, {"grain": "quarter"}, {}),
        ({"tg_sales.created_at": "Quarter"}, {"grain": "month"}, {}),  # lowercase only
        ({"tg_sales.created_at": "day"}, {"grain": "month"}, {}),  # not an allowed grain
        ({"tg_sales.completed_at": "week"}, {"grain": "month"}, {}),  # no control on that member
        ({"ms_sales.total_amount": "sales.order_count"}, {"grain": "month"}, {"measure": "sales.order_count"}),
        ({"ms_sales.total_amount": "sales.users_email"}, {"grain": "month"}, {}),  # not an alternative
    ],
)
def test_tg_and_ms_only_among_what_the_controls_allow(params, grains, fields):
    state = _url(**params).state
    assert (state.grains, state.fields) == (grains, fields)


def test_filter_url_parameters_are_the_inverse_of_the_grammar():
    # given
    params = [
        _f("sales.users_country", {"values": ["France"]}),
        _f("sales.created_at", {"value": "last 12 months"}),
    ]
    state = viewstate.parse_url(CONFIG, params, timezone="UTC").state

    # when
    written = viewstate.filter_url_parameters(CONFIG, state)

    # then
    assert written == [
        'f_sales.users_country={"values":["France"]}',
        'f_sales.created_at={"values":["last 12 months"]}',
    ]
    again = viewstate.parse_url(CONFIG, [tuple(p.split("=", 1)) for p in written], timezone="UTC").state
    assert again.filters == state.filters


def test_a_tile_query_gets_the_controls_as_added_filters_the_grain_the_switch_and_the_timezone():
    # given
    query = {**REVENUE_QUERY, "filters": [{"member": "sales.status", "operator": "equals", "values": ["completed"]}]}
    state = viewstate.parse_url(
        CONFIG,
        [
            _f("sales.users_country", {"value": "France"}),
            _f("sales.created_at", {"value": "last 12 months"}),
            ("tg_sales.created_at", "week"),
            ("ms_sales.total_amount", "sales.order_count"),
            ("timezone", "Europe/Paris"),
        ],
        timezone="UTC",
    ).state

    # when
    composed = viewstate.compose_query(CONFIG, query, state)

    # then
    assert composed == {
        "measures": ["sales.order_count"],
        "timeDimensions": [{"dimension": "sales.created_at", "granularity": "week"}],
        "filters": [
            {"member": "sales.status", "operator": "equals", "values": ["completed"]},
            {"member": "sales.users_country", "operator": "equals", "values": ["France"]},
            {"member": "sales.created_at", "operator": "inDateRange", "values": ["last 12 months"]},
        ],
        "timezone": "Europe/Paris",
    }
    assert query["measures"] == ["sales.total_amount"]  # the snapshot's query is not changed


def test_a_control_of_another_cube_does_not_touch_a_tile():
    composed = viewstate.compose_query(
        CONFIG,
        {"measures": ["products.count"]},
        viewstate.parse_url(CONFIG, [_f("sales.users_country", {"value": "France"})], timezone="UTC").state,
    )
    assert composed == {"measures": ["products.count"], "timezone": "UTC"}


def test_a_spec_is_render_ready_with_escaped_member_fields():
    # given
    query = viewstate.compose_query(CONFIG, REVENUE_QUERY, viewstate.ViewState(fields={"measure": "sales.order_count"}))

    # when
    spec = tiles.render_spec(LINE_SPEC, query=query, switches={"sales.total_amount": "sales.order_count"})

    # then: the switched member, result keys escaped for Vega's dotted paths, the rows as the data set "table"
    # (titles and formats: tests/dashboards/test_tiles.py)
    assert spec["$schema"] == "https://vega.github.io/schema/vega-lite/v5.json"
    assert spec["encoding"]["x"]["field"] == "sales\\.created_at\\.month"
    assert spec["encoding"]["y"]["field"] == "sales\\.order_count"
    assert spec["data"]["name"] == "table"
    assert (spec["width"], spec["autosize"]) == ("container", {"type": "fit", "contains": "padding"})
    assert LINE_SPEC["encoding"]["y"]["field"] == "sales.total_amount"  # the report's spec is not changed


def test_a_date_range_control_offers_the_ranges_the_core_data_api_reads_and_a_value_filter_its_values_query():
    # given the view of the dashboard with a country filter and a period (date range) filter
    view = viewstate.compose_view(
        config=CONFIG,
        snapshot_for=lambda _config: None,
        state=viewstate.default_state(CONFIG, timezone="UTC"),
        members={},
    )

    # then the period control is a date range offering the semantic layer's presets (each a phrase its date parser
    # reads), and the country control a value filter whose values are queried
    controls = {control["id"]: control for control in view["controls"]}
    assert controls["period"]["dateRange"] is True
    assert controls["period"]["presets"] == date_range_presets()
    assert {"value": "last 12 months", "label": "Last 12 months"} in controls["period"]["presets"]
    assert "valuesQuery" not in controls["period"]
    assert controls["country"]["dateRange"] is False
    assert "presets" not in controls["country"]
    assert controls["country"]["valuesQuery"]["dimensions"] == ["sales.users_country"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("x", "state: must be an object"),
        ({"filter": {}}, "state: unknown keys: filter"),
        ({"filters": {"nope": {"values": ["x"]}}}, "state.filters: no FILTER control 'nope' in this dashboard"),
        ({"filters": {"grain": {"values": ["x"]}}}, "state.filters: no FILTER control 'grain' in this dashboard"),
        (
            {"filters": {"country": {"operator": "contains", "values": ["x"]}}},
            "state.filters.country: not a value this control takes",
        ),
        ({"grains": {"grain": "day"}}, "state.grains.grain: must be one of week, month, quarter"),
        (
            {"fields": {"measure": "sales.users_email"}},
            "state.fields.measure: must be one of sales.total_amount, sales.order_count",
        ),
        ({"timezone": "+05:30"}, "state.timezone: must be an IANA time zone name"),
    ],
)
def test_a_bad_state_is_a_400(body, message):
    from embedadmin.core.errors import BadRequest

    with pytest.raises(BadRequest) as raised:
        viewstate.state_from_body(CONFIG, body, timezone="UTC")
    assert raised.value.message == message
