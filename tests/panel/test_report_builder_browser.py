"""The report builder in real headless Chromium against the live server, on PostgreSQL and the demo data: a report
built from nothing (cube, measure, dimension, time dimension and grain, a filter with a looked-up value, a chart type),
previewed as a viewer with rows that match SQL, saved as the Platform API reads it, put on a dashboard draft, opened
again in the builder; bad JSON in the Advanced tab refused beside the field with nothing written."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from embedadmin.accounts.services import duckdb_url
from embedadmin.dashboards import services as dashboards
from embedadmin.dashboards.charts import chart_visualization
from embedadmin.dashboards.models import Report, Workbook
from tests.dashboards.support import content_rows
from tests.panel.conftest import AccountRows, make_dashboard
from tests.panel.test_browser import log_in
from tests.panel.test_report_builder import viewers_of
from tests.semantic.http_support import duck_rows
from tests.waiting import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.postgres]

SHOTS = os.environ.get("EMBEDADMIN_SCREENSHOTS")
EXPECTED_QUERY = {
    "measures": ["sales.total_amount"],
    "dimensions": ["sales.status"],
    "timeDimensions": [{"dimension": "sales.created_at", "granularity": "quarter"}],
    "filters": [{"member": "sales.users_country", "operator": "equals", "values": ["France"]}],
}


def france_by_quarter_and_status(dataset) -> list[tuple[str, str, float]]:
    rows = duck_rows(
        dataset,
        "SELECT strftime(date_trunc('quarter', o.created_at), '%Y-%m-%d'), o.status, SUM(o.amount) "
        "FROM orders o JOIN users u ON u.id = o.user_id WHERE u.country = 'France' GROUP BY 1, 2 ORDER BY 1, 2",
    )
    return [(quarter, status, float(total)) for quarter, status, total in rows]


def preview_rows(page) -> list[tuple[str, str, float]]:
    shown = page.evaluate("() => window.ReportBuilder.preview()")
    rows = [
        (row["sales.created_at.quarter"][:10], row["sales.status"], float(row["sales.total_amount"]))
        for row in shown["data"]
    ]
    return sorted(rows)


def test_a_report_is_built_from_nothing_previewed_as_a_viewer_and_saved(
    page, live_server, acme_rows: AccountRows, demo_model_state, demo_dataset, api
):
    cast = acme_rows.cast
    content = make_dashboard(cast, publish=False, data_source_url=duckdb_url(demo_dataset))
    viewers_of(cast)
    base = live_server.url
    log_in(page, base, cast.created.admin_username, cast.created.admin_password)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    # Script errors only: a refusal the page shows beside its field is logged by Chromium as a failed load too.
    page.on(
        "console",
        lambda message: (
            errors.append(message.text)
            if message.type == "error" and not message.text.startswith("Failed to load resource")
            else None
        ),
    )

    # Given the report list, the administrator opens a new report in the builder,
    page.goto(f"{base}/admin/dashboards/report/")
    page.get_by_role("link", name="New report").click()
    page.wait_for_url(f"{base}/admin/dashboards/report/builder/")
    # names it and picks the Sales view, a measure, a dimension, a time dimension and its grain,
    page.get_by_label("Report name").fill("Revenue in France by quarter")
    page.get_by_label("Cube or view").select_option("sales")
    page.get_by_label("Measures").select_option("sales.total_amount")
    page.get_by_label("Dimensions").select_option("sales.status")
    page.get_by_label("Time dimension").select_option(label="Ordered at")
    page.get_by_label("Granularity").select_option(label="Quarter")
    assert page.get_by_label("Date range").input_value() == ""  # all time
    # a filter whose value is looked up through the Core Data API (as the preview's viewer reads them),
    page.get_by_label("Preview as").select_option(label="A viewer described here…")
    page.get_by_label("External id").fill("preview-admin")
    page.get_by_label("Groups").fill("admin")
    page.get_by_label("Groups").press("Tab")
    filters = page.get_by_label("Filters")
    assert filters.evaluate("el => el.tagName") == "FIELDSET"
    assert page.get_by_role("group", name="Filters").count() == 1
    filters.get_by_role("button", name="Add filter").click()
    page.get_by_label("Filter 1: member").select_option("sales.users_country")
    assert page.get_by_label("Filter 1: operator").input_value() == "equals"
    values = page.get_by_label("Filter 1: values")
    values.locator("option[value='France']").wait_for(state="attached")
    countries = values.locator("option").all_inner_texts()
    every = [c for (c,) in duck_rows(demo_dataset, "SELECT DISTINCT country FROM users ORDER BY country")]
    assert countries == every
    values.select_option("France")
    # and a chart type, then runs it.
    page.get_by_label("Chart type").select_option(label="Stacked bar (vertical)")
    page.get_by_role("button", name="Run").click()

    # Then the preview shows the rows SQL gives for France, drawn as a chart, with the row count and the time taken.
    expected = france_by_quarter_and_status(demo_dataset)
    wait_until(lambda: page.evaluate("() => window.ReportBuilder.preview() !== null"), "a preview")
    wait_until(lambda: preview_rows(page) == pytest.approx(expected), "the preview of the France filter")
    status = page.locator("#b-preview-status")
    wait_until(lambda: status.inner_text().startswith(f"{len(expected)} rows in "), "the row count")
    assert status.inner_text().endswith(" ms, as preview-admin")
    page.locator("#b-preview canvas").wait_for()
    # The Advanced tab shows the Cube query the fields made.
    page.get_by_role("tab", name="Advanced").click()
    assert json.loads(page.get_by_label("Cube query").input_value()) == EXPECTED_QUERY
    visualization = json.loads(page.get_by_label("Visualization (Vega-Lite spec)").input_value())
    assert visualization == chart_visualization(query=EXPECTED_QUERY, chart_type="bar_stacked").visualization
    page.get_by_role("tab", name="Fields").click()

    if SHOTS:  # EMBEDADMIN_SCREENSHOTS=docs/screenshots: the README's picture of the builder
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / "panel-report-builder.png"), full_page=True)

    # When it is saved,
    page.get_by_role("button", name="Save report").click()
    wait_until(lambda: page.locator("#b-save-status").inner_text().startswith("Saved “Revenue in France by quarter”"))

    # the report exists with the query and the visualization, and the Platform API returns it.
    report = Report.objects.get(account=cast.account, name="Revenue in France by quarter")
    assert json.loads(report.json_query) == EXPECTED_QUERY
    assert report.meta == {"visualization": visualization}
    read = api.get(f"/api/v1/deployments/{cast.deployment.pk}/reports/{report.pk}", **cast.platform_headers)
    assert read.status_code == 200
    assert json.loads(read.json()["jsonQuery"]) == EXPECTED_QUERY
    assert read.json()["meta"] == {"visualization": visualization}
    assert page.url == f"{base}/admin/dashboards/report/{report.pk}/builder/"

    # "Add to dashboard" puts it on the workbook's draft, below its widgets.
    page.get_by_label("Workbook").select_option(label=content.workbook.name)
    page.get_by_role("button", name="Add to dashboard").click()
    page.locator("#b-add-status a").wait_for()
    draft = Workbook.objects.get(pk=content.workbook.pk).dashboard_draft
    assert draft["widgets"][-1]["config"] == {"reportId": report.pk}
    assert draft["widgets"][-1]["position"]["y"] == 3

    # The preview is drawn by the embed page's own tile drawing (static/embed/tiles.js): as a table, the tile's
    # columns with the titles a person reads and each value formatted by its member's format;
    page.get_by_label("Chart type").select_option("table")
    preview = page.locator("#b-preview-body")
    cells = preview.locator("table.data-table tbody tr").first.locator("td")
    wait_until(lambda: cells.count() == 3, "the preview drawn as a table")
    assert preview.locator("table.data-table thead th").all_inner_texts() == ["Ordered at", "Status", "Order value"]
    assert re.fullmatch(r"Q[1-4] 20\d\d", cells.nth(0).inner_text())
    assert cells.nth(2).inner_text().startswith("$")
    # as a pivot table, with its grand total queried as the same viewer (the sum of what SQL gives for France).
    page.get_by_label("Chart type").select_option("pivot")
    total = preview.locator("table.pivot-table tfoot td.pivot-total")
    wait_until(lambda: total.count() == 1, "the preview drawn as a pivot table")
    assert total.inner_text() == f"${sum(value for *_, value in expected):,.2f}"

    assert errors == []
    # Bad JSON in the Advanced tab is refused beside the field, and nothing is written.
    before = content_rows()
    page.get_by_role("tab", name="Advanced").click()
    page.get_by_label("Cube query").fill('{"measures": ["sales.total_amount"')
    page.get_by_role("button", name="Save report").click()
    query_error = page.locator("#b-query-error")
    wait_until(lambda: query_error.inner_text() != "", "the query's error")
    assert query_error.inner_text() == "jsonQuery: not valid JSON"
    assert page.locator("#b-save-status").inner_text() == "Not saved."
    assert content_rows() == before


def test_a_saved_report_opens_in_the_builder_with_its_fields(
    page, live_server, acme_rows: AccountRows, demo_model_state, demo_dataset
):
    cast = acme_rows.cast
    content = make_dashboard(cast, publish=False, data_source_url=duckdb_url(demo_dataset))
    viewers_of(cast)
    by_quarter = {**EXPECTED_QUERY["timeDimensions"][0], "dateRange": "last 12 months"}
    query = {**EXPECTED_QUERY, "timeDimensions": [by_quarter]}
    line = chart_visualization(query=query, chart_type="line").visualization
    report = Report.objects.get(pk=content.report.pk)
    dashboards.report_update(report=report, fields={"json_query": json.dumps(query), "meta": {"visualization": line}})
    log_in(page, live_server.url, cast.created.admin_username, cast.created.admin_password)

    page.goto(f"{live_server.url}/admin/dashboards/report/{report.pk}/change/")
    page.get_by_role("link", name="Edit in builder").click()
    page.wait_for_url(f"{live_server.url}/admin/dashboards/report/{report.pk}/builder/")

    # (the page's script fills every field at once, the name among them)
    expect(page.get_by_label("Report name")).to_have_value(report.name)
    assert page.get_by_label("Cube or view").input_value() == "sales"
    selected = "el => Array.from(el.selectedOptions).map(o => o.value)"
    assert page.get_by_label("Measures").evaluate(selected) == ["sales.total_amount"]
    assert page.get_by_label("Dimensions").evaluate(selected) == ["sales.status"]
    assert page.get_by_label("Time dimension").input_value() == "sales.created_at"
    assert page.get_by_label("Granularity").input_value() == "quarter"
    assert page.get_by_label("Date range").input_value() == "last 12 months"
    assert page.get_by_label("Filter 1: member").input_value() == "sales.users_country"
    assert page.get_by_label("Filter 1: values").evaluate(selected) == ["France"]
    assert page.get_by_label("Chart type").input_value() == "line"
    page.get_by_role("tab", name="Advanced").click()
    assert json.loads(page.get_by_label("Cube query").input_value()) == query
    assert page.locator("#b-query-notice").is_hidden()

    # A query written in the Advanced tab that the fields can show is taken back into them;
    by_size = {"measures": ["sales.order_count"], "dimensions": ["sales.size"], "limit": 3}
    page.get_by_label("Cube query").fill(json.dumps(by_size))
    page.get_by_label("Cube query").press("Tab")
    page.get_by_role("tab", name="Fields").click()
    assert page.get_by_label("Measures").evaluate(selected) == ["sales.order_count"]
    assert page.get_by_label("Dimensions").evaluate(selected) == ["sales.size"]
    assert (page.get_by_label("Time dimension").input_value(), page.get_by_label("Limit").input_value()) == ("", "3")
    assert page.locator("#b-filter-list").inner_text() == ""
    # one they cannot (two time dimensions) is used as written, and the fields say so.
    two_times = {
        "measures": ["sales.order_count"],
        "timeDimensions": [
            {"dimension": "sales.created_at", "granularity": "year"},
            {"dimension": "sales.completed_at", "dateRange": "last year"},
        ],
    }
    page.get_by_role("tab", name="Advanced").click()
    page.get_by_label("Cube query").fill(json.dumps(two_times))
    page.get_by_label("Cube query").press("Tab")
    assert page.locator("#b-query-notice").is_visible()
    page.get_by_role("tab", name="Fields").click()
    assert page.locator("#b-fields-notice").inner_text().startswith("The query is written by hand")
