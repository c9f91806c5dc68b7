"""The tiles as a viewer reads them, in real headless Chromium inside the sample host app: every kind of chart of the
demo's chart gallery drawn, axes and tooltips formatted from the members' formats and labelled for the grain, in
the viewer's locale, a pivot table with its totals, and titles that follow the measure switch. Figures are compared
with SQL on the demo dataset.

The screenshots go to ``tmp_path``, or to ``$EMBED_SCREENSHOTS_DIR`` when it is set (how
``docs/screenshots/embedded-dashboard.png`` and ``embedded-chart-gallery.png`` are made).
"""

# ruff: noqa: F811 (the fixtures imported below are the tests' arguments)
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from embedadmin.semantic.query.dates import DATE_RANGE_PRESETS
from tests.dashboards.test_embed_browser import (  # noqa: F401 (fixtures)
    Embed,
    browser,
    embed,
    open_host,
    page,
)
from tests.semantic.http_support import demo_duckdb, duck_rows, fresh_semantic_state  # noqa: F401
from tests.waiting import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.postgres]

GALLERY = "ChartGallery"
GALLERY_TILES = {
    "revenue": "kpi",
    "completion-rate": "kpi",
    "average-order": "kpi",
    "units-sold": "kpi",
    "orders-over-time": "vega",
    "revenue-over-time": "vega",
    "orders-by-age-group": "vega",
    "revenue-by-category": "vega",
    "orders-by-size": "vega",
    "orders-by-status": "vega",
    "top-cities": "table",
    "category-by-year": "pivot",
}
QUARTER = re.compile(r"^Q[1-4] \d{4}$")
MONTH = re.compile(r"^[A-Z][a-z]{2} \d{4}$")
GERMANY = "u.country = 'Germany'"
LINES = (
    "FROM line_items li JOIN orders o ON o.id = li.order_id JOIN users u ON u.id = o.user_id"
    " JOIN products p ON p.id = li.product_id"
)


def settled(frame) -> bool:
    return frame.locator("#embed-root").evaluate(
        "root => !root.classList.contains('is-updating') && window.embedDashboard.idle()"
        " && Object.values(window.embedDashboard.tileStatus()).every(s => s === 'ready')"
    )


def axes(frame, widget: str) -> dict[str, Any]:
    return frame.locator("#embed-root").evaluate(f"() => window.embedDashboard.axes('{widget}')")


def labels(axis: dict[str, Any]) -> list[str]:
    return [label for label in axis["labels"] if label]


def screenshot(page, tmp_path: Path, name: str) -> None:
    """The whole host page at 1280 wide, its frame as tall as its content (a frame outside the viewport is not
    painted in a headless screenshot)."""
    folder = Path(os.environ.get("EMBED_SCREENSHOTS_DIR") or tmp_path)
    height = page.evaluate("() => document.documentElement.scrollHeight")
    page.set_viewport_size({"width": 1280, "height": height})
    page.wait_for_timeout(300)  # a resize repaints the charts: let it happen before the picture
    page.screenshot(path=str(folder / name), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})


def money(value: float) -> str:
    return f"${value:,.2f}"


def test_the_chart_gallery_draws_every_kind_of_chart_readably(page, embed: Embed, tmp_path):
    # given: Anna (Germany only, by the access policy)
    frame = open_host(page, embed, "anna", dashboard=GALLERY)
    wait_until(lambda: settled(frame), "every tile is drawn")

    # then: every tile drew, as its kind
    tiles = frame.locator("#embed-root").evaluate("() => window.embedDashboard.tileStatus()")
    assert tiles == dict.fromkeys(GALLERY_TILES, "ready")
    for widget, kind in GALLERY_TILES.items():
        assert frame.locator(f"[data-widget-id='{widget}'].tile-{kind}").count() == 1, widget
    assert frame.locator("[data-widget-id='orders-by-size'] canvas").count() == 1

    # KPIs by their members' formats, equal to SQL
    [(revenue, completed, orders)] = duck_rows(
        embed.dataset,
        "SELECT (SELECT sum(li.quantity * li.price) " + LINES + f" WHERE {GERMANY}),"
        " count(*) FILTER (WHERE o.status = 'completed'), count(*)"
        f" FROM orders o JOIN users u ON u.id = o.user_id WHERE {GERMANY}",
    )
    assert frame.locator("[data-widget-id='revenue'] .kpi-value").inner_text() == money(float(revenue))
    rate = frame.locator("[data-widget-id='completion-rate'] .kpi-value").inner_text()
    assert rate == f"{100 * completed / orders:.2f}".rstrip("0").rstrip(".") + "%"

    # axes: titles from the members, money abbreviated with its symbol, time labelled for the grain
    revenue_over_time = axes(frame, "revenue-over-time")
    assert (revenue_over_time["bottom"]["title"], revenue_over_time["left"]["title"]) == ("Ordered at", "Revenue")
    assert labels(revenue_over_time["bottom"])
    assert all(QUARTER.match(t) for t in labels(revenue_over_time["bottom"]))
    assert all(t.startswith("$") for t in labels(revenue_over_time["left"]))
    assert any(t.endswith("K") for t in labels(revenue_over_time["left"]))
    orders_over_time = axes(frame, "orders-over-time")
    assert labels(orders_over_time["bottom"])
    assert all(MONTH.match(t) for t in labels(orders_over_time["bottom"]))
    stacked = axes(frame, "orders-by-status")
    assert all(QUARTER.match(t) for t in labels(stacked["bottom"]))
    assert axes(frame, "revenue-by-category")["bottom"]["title"] == "Revenue"
    for widget, kind in GALLERY_TILES.items():
        if kind != "vega":
            continue
        for axis in axes(frame, widget).values():
            for text in [*axis["labels"], axis["title"] or ""]:
                assert "sales." not in text, (widget, text)
                assert "\\" not in text, (widget, text)

    # a tooltip names the point under the pointer, formatted as the axes are
    frame_box = page.locator("iframe#embed").bounding_box()
    points = frame.locator("#embed-root").evaluate("() => window.embedDashboard.marks('revenue-over-time')")
    point = next(p for p in points if p["marktype"] == "symbol")
    page.mouse.move(frame_box["x"] + point["x"], frame_box["y"] + point["y"])
    tooltip = frame.locator(".embed-tooltip.visible")
    tooltip.wait_for()
    [(first_quarter,)] = duck_rows(
        embed.dataset,
        "SELECT sum(li.quantity * li.price) " + LINES + f" WHERE {GERMANY}"
        " GROUP BY date_trunc('quarter', o.created_at) ORDER BY date_trunc('quarter', o.created_at) LIMIT 1",
    )
    assert tooltip.inner_text().split("\n") == ["Ordered at\tQ1 2023", f"Revenue\t{money(float(first_quarter))}"]

    # the pivot table: categories by year, its cells and totals equal to SQL
    pivot = frame.locator("[data-widget-id='category-by-year'] table")
    head = pivot.locator("thead").inner_text()
    for year in ("2023", "2024", "2025", "Total"):
        assert year in head
    by_category_year = {
        (category, int(year)): float(value)
        for category, year, value in duck_rows(
            embed.dataset,
            "SELECT p.category, year(o.created_at), sum(li.quantity * li.price) "
            + LINES
            + f" WHERE {GERMANY} GROUP BY ALL",
        )
    }
    electronics = pivot.locator("tbody tr", has=page.locator("th", has_text="Electronics"))
    cells = electronics.locator("td").all_inner_texts()
    assert cells[:3] == [money(by_category_year[("Electronics", year)]) for year in (2023, 2024, 2025)]
    assert cells[3] == money(sum(v for (c, _), v in by_category_year.items() if c == "Electronics"))
    footer = pivot.locator("tfoot td").all_inner_texts()
    assert footer[-1] == money(float(revenue))

    screenshot(page, tmp_path, "embedded-chart-gallery.png")


def test_the_measure_switch_retitles_the_tiles(page, embed: Embed, tmp_path):
    # given
    frame = open_host(page, embed, "anna")
    wait_until(lambda: settled(frame), "every tile is drawn")
    screenshot(page, tmp_path, "embedded-dashboard.png")
    # The date range offers the server's ranges (those the semantic layer's date parser reads), not a list of its own.
    presets = frame.get_by_label("Order date").locator("option").all_inner_texts()
    assert presets == ["All time", *(label for _, label in DATE_RANGE_PRESETS), "Custom range"]
    titles = {
        widget: frame.locator(f"[data-widget-id='{widget}'] .tile-title").inner_text()
        for widget in ("revenue", "revenue-over-time", "revenue-by-category", "top-cities")
    }
    assert titles == {
        "revenue": "Revenue",
        "revenue-over-time": "Revenue over time",
        "revenue-by-category": "Revenue by product category",
        "top-cities": "Top cities",
    }
    assert frame.locator("[data-widget-id='top-cities'] thead th").all_inner_texts() == [
        "City",
        "Orders",
        "Revenue",
    ]

    # when
    frame.get_by_label("Measure").select_option(label="Orders")
    wait_until(lambda: settled(frame), "the switched view is drawn")

    # then: the titles name the measure shown, and the table shows it once
    assert frame.locator("[data-widget-id='revenue'] .tile-title").inner_text() == "Orders"
    assert frame.locator("[data-widget-id='revenue-over-time'] .tile-title").inner_text() == "Orders over time"
    assert frame.locator("[data-widget-id='revenue-by-category'] .tile-title").inner_text() == (
        "Orders by product category"
    )
    assert frame.locator("[data-widget-id='top-cities'] thead th").all_inner_texts() == ["City", "Orders"]
    over_time = axes(frame, "revenue-over-time")
    assert over_time["left"]["title"] == "Orders"
    assert not any("$" in t for t in over_time["left"]["labels"])
    [(orders,)] = duck_rows(
        embed.dataset, "SELECT count(*) FROM orders o JOIN users u ON u.id = o.user_id WHERE u.country = 'Germany'"
    )
    assert frame.locator("[data-widget-id='revenue'] .kpi-value").inner_text() == f"{orders:,}"


def test_tiles_and_axes_read_in_the_viewers_locale(page, embed: Embed):
    # given: the page asked in German
    frame = open_host(page, embed, "anna", locale="de-DE")
    wait_until(lambda: settled(frame), "every tile is drawn")

    # then: the KPI and the axis use the same formatter, in German
    [(revenue,)] = duck_rows(embed.dataset, "SELECT sum(li.quantity * li.price) " + LINES + f" WHERE {GERMANY}")
    expected = frame.locator("#embed-root").evaluate(
        "(root, v) => new Intl.NumberFormat('de-DE', {style: 'currency', currency: 'USD'}).format(v)", float(revenue)
    )
    assert frame.locator("[data-widget-id='revenue'] .kpi-value").inner_text() == expected
    left = labels(axes(frame, "revenue-over-time")["left"])
    assert left
    assert all(t.endswith("$") for t in left)
    month = labels(axes(frame, "revenue-over-time")["bottom"])
    german = frame.locator("#embed-root").evaluate(
        "() => new Intl.DateTimeFormat('de-DE', {timeZone: 'UTC', year: 'numeric', month: 'short'})"
        ".format(new Date(Date.UTC(2024, 0, 1)))"
    )
    assert german in month
