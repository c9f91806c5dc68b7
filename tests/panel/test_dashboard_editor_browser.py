"""The dashboard editor in real headless Chromium: an administrator builds a dashboard from the deployment's reports
and controls with the mouse (GridStack's drag and resize, driven by Playwright's ``mouse``) and forms, saves and
publishes it, shares it with two embed tenants, and the sample host app (``demo/host_app.py``) embeds it for a viewer
of each: the tiles are compared with SQL run on the demo dataset, under each viewer's row policy.

``EMBEDADMIN_SCREENSHOTS=<dir>`` saves the editor and its comparison as PNGs there (``docs/screenshots`` for the
README's pictures).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from embedadmin.audit.models import AuditEntry
from embedadmin.dashboards import services as dashboards
from embedadmin.dashboards.models import Dashboard, Workbook
from embedadmin.semantic.query.dates import DATE_RANGE_PRESETS
from tests.dashboards import test_embed_browser as embed_browser
from tests.dashboards.test_embed_browser import Embed, open_host
from tests.panel.test_browser import log_in
from tests.semantic import http_support
from tests.semantic.http_support import duck_rows
from tests.waiting import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.postgres]

# The embed browser tests' fixtures: acme's deployment on the demo dataset, and the sample host app serving it.
browser = embed_browser.browser
page = embed_browser.page
embed = embed_browser.embed
demo_duckdb = http_support.demo_duckdb
fresh_semantic_state = http_support.fresh_semantic_state

COLS, ROW_HEIGHT = 12, 80
SHOTS = os.environ.get("EMBEDADMIN_SCREENSHOTS")

# What the grid shows: each widget's position as GridStack wrote it on the widget's element.
DOM_POSITIONS = """() => Object.fromEntries([...document.querySelectorAll('#editor-grid .grid-stack-item')].map(el => [
  el.querySelector('[data-widget-id]').dataset.widgetId,
  {x: +(el.getAttribute('gs-x') || 0), y: +(el.getAttribute('gs-y') || 0),
   w: +(el.getAttribute('gs-w') || 1), h: +(el.getAttribute('gs-h') || 1)}]))"""


def shot(page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / name), full_page=True)


def positions(page) -> dict[str, dict[str, int]]:
    return page.evaluate(DOM_POSITIONS)


def card(page, title: str):
    return page.get_by_role("group", name=title, exact=True)


def drag(page, locator, columns: int, rows: int, *, cols: int = COLS, row_height: int = ROW_HEIGHT) -> None:
    """Press on ``locator``, move the mouse by whole grid cells in small steps, release: as a person drags."""
    grid = page.locator("#editor-grid").bounding_box()
    box = locator.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + columns * grid["width"] / cols, y + rows * row_height, steps=15)
    page.mouse.up()


def editor_url(embed: Embed, workbook: Workbook) -> str:
    return f"{embed.base}/admin/dashboards/workbook/{workbook.pk}/dashboard-editor/"


def open_editor(page, embed: Embed, workbook: Workbook, csp_reports: list[str]) -> None:
    page.on("console", lambda m: csp_reports.append(m.text) if "Content Security Policy" in m.text else None)
    page.set_viewport_size({"width": 1280, "height": 1200})  # room below the widgets to drag them to
    log_in(page, embed.base, embed.cast.created.admin_username, embed.cast.created.admin_password)
    page.goto(editor_url(embed, workbook))
    page.wait_for_selector("body[data-editor-ready=true]")


def stored(workbook: Workbook) -> dict[str, Any]:
    return Workbook.objects.get(pk=workbook.pk).dashboard_draft


@pytest.fixture
def order_value(embed: Embed):
    """A KPI report of the deployment (as the Platform API or the report builder writes one): the order value."""
    return dashboards.report_create(
        deployment=embed.cast.deployment,
        fields={
            "name": "Total order value",
            "json_query": json.dumps({"measures": ["sales.total_amount"]}),
            "meta": {"visualization": {"kind": "kpi", "measure": "sales.total_amount"}},
        },
    )


@pytest.fixture
def orders_by_period(embed: Embed):
    """A table report of the deployment: orders by month."""
    return dashboards.report_create(
        deployment=embed.cast.deployment,
        fields={
            "name": "Orders by period",
            "json_query": json.dumps(
                {
                    "measures": ["sales.order_count"],
                    "timeDimensions": [{"dimension": "sales.created_at", "granularity": "month"}],
                    "order": {"sales.created_at": "asc"},
                }
            ),
            "meta": {"visualization": {"kind": "table", "columns": ["sales.created_at", "sales.order_count"]}},
        },
    )


def sql_completed(embed: Embed, country: str, grain: str) -> tuple[float, list[int]]:
    """Revenue of the country's completed orders, and their counts by ``grain`` in time order."""
    where = "FROM orders o JOIN users u ON u.id = o.user_id WHERE u.country = ? AND o.status = 'completed'"
    [(revenue,)] = duck_rows(embed.dataset, f"SELECT sum(o.amount) {where}", [country])
    counts = duck_rows(
        embed.dataset,
        f"SELECT date_trunc('{grain}', o.created_at) AS period, count(*) {where} GROUP BY period ORDER BY period",
        [country],
    )
    return float(revenue), [int(n) for _, n in counts]


def table_counts(frame, widget_id: str) -> list[int]:
    cells = frame.locator(f"[data-widget-id='{widget_id}'] tbody tr td.num").all_inner_texts()
    return [int(re.sub(r"\D", "", text)) for text in cells]


def test_build_a_dashboard_by_drag_and_forms_publish_it_and_embed_it_for_two_viewers(
    page, embed: Embed, order_value, orders_by_period
):
    # given: an empty workbook of acme's deployment, which holds the demo's reports and two more
    workbook = dashboards.workbook_create(deployment=embed.cast.deployment, changes={"name": "Regional sales"})
    csp_reports: list[str] = []
    open_editor(page, embed, workbook, csp_reports)
    expect(page.get_by_role("status")).to_have_text("A new draft: nothing saved yet.")

    # when: the administrator adds two reports, a filter and a grain control, set in forms
    page.get_by_label("Dashboard title").fill("Regional sales")
    page.get_by_role("button", name="Add report").click()
    page.get_by_label("Report", exact=True).select_option(label="Total order value (KPI)")
    page.get_by_label("Title", exact=True).fill("Completed revenue")
    page.get_by_role("button", name="Add report").click()
    page.get_by_label("Report", exact=True).select_option(label="Orders by period (Table)")
    page.get_by_role("button", name="Add filter").click()
    page.get_by_label("Member").select_option("sales.status")
    expect(page.get_by_label("Title", exact=True)).to_have_value("Status")  # the member's title, until changed
    page.get_by_label("Title", exact=True).fill("Order status")
    page.get_by_role("group", name="Operators").get_by_label("is not", exact=True).check()
    page.get_by_label("Default values").fill("completed")
    page.get_by_role("button", name="Add grain").click()
    page.get_by_label("Member").select_option("sales.created_at")
    page.get_by_role("group", name="Grains").get_by_label("Week", exact=True).uncheck()
    page.get_by_label("Default grain").select_option("quarter")
    page.get_by_role("button", name="Done").click()
    expect(page.get_by_role("status")).to_have_text("Unsaved changes")

    # and arranges them with the mouse: the table made a row taller, the KPI dragged below everything, then widened
    # and heightened
    placed = positions(page)
    kpi, table = placed["chart-1"], placed["chart-2"]
    drag(page, page.locator(".grid-stack-item:has([data-widget-id='chart-2']) > .ui-resizable-se"), 0, 1)
    taller = {**table, "h": table["h"] + 1}
    wait_until(lambda: positions(page)["chart-2"] == taller, "the table is a row taller")
    bottom = max(p["y"] + p["h"] for p in positions(page).values())
    drag(page, card(page, "Completed revenue").locator(".editor-card-title"), -kpi["x"], bottom - kpi["y"])
    moved = {"x": 0, "y": bottom, "w": kpi["w"], "h": kpi["h"]}
    wait_until(lambda: positions(page)["chart-1"] == moved, "the KPI is where it was dropped")
    drag(page, page.locator(".grid-stack-item:has([data-widget-id='chart-1']) > .ui-resizable-se"), 2, 1)
    resized = {**moved, "w": kpi["w"] + 2, "h": kpi["h"] + 1}
    wait_until(lambda: positions(page)["chart-1"] == resized, "the KPI has its new size")
    page.get_by_role("button", name="Save draft").click()
    expect(page.get_by_role("status")).to_have_text("Draft saved.")

    # then: the draft holds the widgets as set, at the positions the grid shows, exactly
    draft = stored(workbook)
    shown = positions(page)
    assert {w["id"]: w["position"] for w in draft["widgets"]} == shown
    assert shown["chart-1"] == resized
    assert shown["chart-2"] == taller
    assert draft["title"] == "Regional sales"
    assert draft["layout"] == {"cols": COLS, "rowHeight": ROW_HEIGHT}
    by_id = {w["id"]: w for w in draft["widgets"]}
    assert by_id["chart-1"]["config"] == {"reportId": order_value.pk, "title": "Completed revenue"}
    assert by_id["chart-2"]["config"] == {"reportId": orders_by_period.pk}
    assert by_id["filter-1"]["config"] == {
        "member": "sales.status",
        "label": "Order status",
        "operators": ["equals", "notEquals"],
        "multiple": True,
        "defaultValue": {"operator": "equals", "values": ["completed"]},
    }
    assert by_id["time_grain-1"]["config"] == {
        "member": "sales.created_at",
        "label": "Grain",
        "grains": ["month", "quarter", "year"],
        "defaultGrain": "quarter",
    }

    # when: published, allowed in embeds and shared with both tenants on the embed access page
    page.get_by_role("button", name="Publish", exact=True).click()
    expect(page.get_by_role("status")).to_contain_text("Published Regional sales: version 1 (publicId ")
    dashboard = Dashboard.objects.get(workbook=workbook)
    published = dashboard.versions.get().config["widgets"]
    assert [(w["id"], w["position"]) for w in published] == [(w["id"], w["position"]) for w in draft["widgets"]]
    page.get_by_role("link", name="Embed access").click()
    page.get_by_role("button", name="Allow embedding").click()
    for tenant in ("northwind-traders", "contoso-shops"):
        page.get_by_label("Embed tenant:").select_option(label=tenant)
        page.get_by_role("button", name="Share", exact=True).click()
        expect(page.locator("#panel-shares")).to_contain_text(f"embed tenant {tenant}")
    assert csp_reports == []

    # then: each viewer of the host app sees their own country's completed orders, equal to SQL
    for viewer, country in (("anna", "Germany"), ("louis", "France")):
        frame = open_host(page, embed, viewer, dashboard=dashboard.public_id)
        revenue, by_quarter = sql_completed(embed, country, "quarter")
        expect(frame.locator("[data-widget-id='chart-1'] .tile-title")).to_have_text("Completed revenue")
        assert float(frame.locator("[data-widget-id='chart-1'] .kpi-value").get_attribute("title")) == pytest.approx(
            revenue, abs=0.01
        )
        assert table_counts(frame, "chart-2") == by_quarter
        assert frame.get_by_label("Grain").input_value() == "quarter"
        # the grain control switches the table to years
        frame.get_by_label("Grain").select_option("year")
        _, by_year = sql_completed(embed, country, "year")
        wait_until(lambda: table_counts(frame, "chart-2") == by_year, f"{viewer}'s table by year")  # noqa: B023


def sales_overview(embed: Embed) -> Workbook:
    """The demo's headline dashboard, applied from its YAML and published (the ``embed`` fixture)."""
    return Workbook.objects.get(deployment=embed.cast.deployment, slug="sales-overview")


def test_a_refused_draft_is_shown_on_its_widget_and_nothing_is_written(page, embed: Embed):
    # given: the demo's dashboard in the editor
    workbook = sales_overview(embed)
    before = stored(workbook)
    csp_reports: list[str] = []
    open_editor(page, embed, workbook, csp_reports)

    # when: the grain control is left with no grain, and the draft saved
    card(page, "Grain").get_by_role("button", name="Edit").click()
    grains = page.get_by_role("group", name="Grains")
    for grain in ("Week", "Month", "Quarter", "Year"):
        grains.get_by_label(grain, exact=True).uncheck()
    expect(grains.get_by_role("checkbox", checked=True)).to_have_count(0)
    page.get_by_role("button", name="Save draft").click()

    # then: the refusal is shown on the widget and in the status, and nothing was written
    refusal = "config.grains must be a non-empty list of granularities"
    expect(card(page, "Grain").get_by_role("alert")).to_have_text(refusal)
    expect(page.get_by_role("status")).to_have_text(f"Not saved: grain “Grain”: {refusal}")
    assert stored(workbook) == before
    assert not AuditEntry.objects.filter(account=embed.cast.account, via="panel").exists()

    # when: a grain is chosen again, the draft saves and the refusal goes
    page.get_by_role("group", name="Grains").get_by_label("Month", exact=True).check()
    page.get_by_role("button", name="Save draft").click()
    expect(page.get_by_role("status")).to_have_text("Draft saved.")
    expect(card(page, "Grain").get_by_role("alert")).to_have_count(0)
    grain = next(w for w in stored(workbook)["widgets"] if w["id"] == "grain")
    assert grain["config"]["grains"] == ["month"]
    assert csp_reports == []


def test_compare_with_published_says_what_changed_in_words(page, embed: Embed):
    # given: the demo's published dashboard in the editor, a filter's settings open
    workbook = sales_overview(embed)
    before = stored(workbook)
    version = Dashboard.objects.get(workbook=workbook).version_number
    csp_reports: list[str] = []
    open_editor(page, embed, workbook, csp_reports)
    card(page, "Order status").get_by_role("button", name="Edit").click()
    expect(page.get_by_role("complementary", name="Filter settings")).to_be_visible()
    shot(page, "panel-dashboard-editor.png")

    # when: a report is dragged a row down, another retitled and a third removed, and the draft compared
    top_cities = positions(page)["top-cities"]
    drag(page, card(page, "Top cities").locator(".editor-card-title"), 0, 1)
    wait_until(lambda: positions(page)["top-cities"] == {**top_cities, "y": top_cities["y"] + 1}, "Top cities moved")
    card(page, "Revenue over time").get_by_role("button", name="Edit").click()
    page.get_by_label("Title", exact=True).fill("Revenue by month")
    average = positions(page)["average-order"]
    card(page, "Average order value").get_by_role("button", name="Remove").click()
    page.get_by_role("button", name="Compare with published").click()

    # then: the changes are listed in words, against the published version
    dialog = page.get_by_role("dialog", name=f"Changes since version {version}")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Includes changes not saved yet.")
    listed = [text.strip() for text in dialog.get_by_role("listitem").all_text_contents()]
    x, y = top_cities["x"] + 1, top_cities["y"] + 1
    assert sorted(listed) == sorted(
        [
            "Retitled Report “Revenue over time” retitled “Revenue by month”",
            f"Moved Report “Top cities” moved from column {x}, row {y} to column {x}, row {y + 1}",
            f"Removed Report “Average order value” removed (was at column {average['x'] + 1}, row {average['y'] + 1}, "
            f"{average['w']} columns wide, {average['h']} rows high)",
        ]
    )
    shot(page, "panel-dashboard-compare.png")
    dialog.get_by_role("button", name="Close").click()
    expect(dialog).to_be_hidden()
    assert stored(workbook) == before  # comparing writes nothing
    assert csp_reports == []


def test_text_a_date_range_and_a_measure_switch_are_set_in_forms(page, embed: Embed):
    workbook = dashboards.workbook_create(deployment=embed.cast.deployment, changes={"name": "Forms"})
    csp_reports: list[str] = []
    open_editor(page, embed, workbook, csp_reports)

    page.get_by_role("button", name="Add text").click()
    page.get_by_role("textbox", name="Text", exact=True).fill("Figures follow the rows your organisation may see.")
    page.get_by_role("button", name="Add date range").click()
    page.get_by_label("Member").select_option("sales.created_at")
    # The ranges offered are the server's (those the semantic layer's date parser reads), as the dashboard offers them.
    ranges = page.get_by_label("Default range").locator("option").all_inner_texts()
    assert ranges == ["All time", *(label for _, label in DATE_RANGE_PRESETS), "Between two dates"]
    page.get_by_label("Default range").select_option(label="Last 12 months")
    page.get_by_role("button", name="Add measure switch").click()
    page.get_by_label("Member").select_option("sales.total_amount")
    page.get_by_role("group", name="Alternatives").get_by_label("Orders (Sales)", exact=True).check()
    expect(
        page.get_by_role("group", name="Alternatives").get_by_label("Order value (Sales)", exact=True)
    ).to_be_disabled()
    page.get_by_label("Width").fill("3")
    page.get_by_label("Width").press("Enter")
    page.get_by_role("button", name="Save draft").click()
    expect(page.get_by_role("status")).to_have_text("Draft saved.")

    widgets = {w["id"]: w for w in stored(workbook)["widgets"]}
    assert widgets["text-1"]["config"] == {"text": "Figures follow the rows your organisation may see."}
    assert widgets["filter-1"]["config"] == {
        "member": "sales.created_at",
        "label": "Ordered at",
        "operators": ["inDateRange"],
        "defaultValue": {"operator": "inDateRange", "values": ["last 12 months"]},
    }
    assert widgets["field-1"]["config"] == {
        "member": "sales.total_amount",
        "label": "Measure",
        "alternatives": ["sales.total_amount", "sales.order_count"],
    }
    assert widgets["field-1"]["position"]["w"] == 3  # set in the position fields
    assert {w["id"]: w["position"] for w in widgets.values()} == positions(page)
    expect(card(page, "Figures follow the rows your…")).to_be_visible()
    assert csp_reports == []


def test_the_grid_is_the_drafts_columns_and_rows_and_positions_round_trip(page, embed: Embed, order_value):
    # given: a draft written elsewhere (the Platform API) on a grid of 24 columns of 50-pixel rows
    workbook = dashboards.workbook_create(deployment=embed.cast.deployment, changes={"name": "Fine grid"})
    draft = {
        "title": "Fine grid",
        "layout": {"cols": 24, "rowHeight": 50},
        "theme": {"accent": "#0a7"},
        "widgets": [
            {
                "id": "kpi",
                "type": "CHART",
                "position": {"x": 17, "y": 3, "w": 7, "h": 2},
                "config": {"reportId": order_value.pk},
            },
            {"id": "note", "type": "TEXT", "position": {"x": 0, "y": 0, "w": 5, "h": 1}, "config": {"text": "A note"}},
        ],
    }
    dashboards.workbook_dashboard_set(workbook=workbook, draft=draft)
    csp_reports: list[str] = []
    open_editor(page, embed, workbook, csp_reports)

    # then: the editor's grid has the draft's columns and row height, and every widget sits where the draft says
    grid = page.locator("#editor-grid")
    assert grid.evaluate("el => getComputedStyle(el).getPropertyValue('--gs-cell-height').trim()") == "50px"
    width = grid.bounding_box()["width"]
    kpi_box = page.locator(".grid-stack-item:has([data-widget-id='kpi'])").bounding_box()
    assert kpi_box["width"] == pytest.approx(width * 7 / 24, abs=1)
    assert kpi_box["height"] == pytest.approx(2 * 50, abs=1)
    assert positions(page) == {w["id"]: w["position"] for w in draft["widgets"]}
    expect(page.get_by_role("status")).to_have_text("")

    # when: the note is dragged three of these columns right and two rows down, and the draft saved
    drag(page, card(page, "A note").locator(".editor-card-title"), 3, 2, cols=24, row_height=50)
    wait_until(lambda: positions(page)["note"] == {"x": 3, "y": 2, "w": 5, "h": 1}, "the note moved on the fine grid")
    page.get_by_role("button", name="Save draft").click()
    expect(page.get_by_role("status")).to_have_text("Draft saved.")

    # then: only the note's position changed; the layout, the theme and the other widget are as they were
    saved = stored(workbook)
    assert saved == {
        **draft,
        "widgets": [draft["widgets"][0], {**draft["widgets"][1], "position": {"x": 3, "y": 2, "w": 5, "h": 1}}],
    }
    assert csp_reports == []
