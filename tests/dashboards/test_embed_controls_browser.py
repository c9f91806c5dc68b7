"""The embedded dashboard's controls never lose a change, in real headless Chromium inside the sample host app.

Every control change and every host ``set-filter`` is applied in order on top of the newest state asked for, and an
answer to an older state never overwrites a newer one. The server's ``/view`` is made slow here (each answer
waits), so that the changes below are all made while earlier answers are still on their way: what used to be a
race that lost a change one try in two is the case every run. The final tiles are compared with SQL, and the
``filters-changed`` events the host received with the state asked for.
"""

# ruff: noqa: F811 (the fixtures imported below are the tests' arguments)
from __future__ import annotations

import time
from typing import Any

import pytest

from embedadmin.embedding import pages
from tests.dashboards.test_embed_browser import (  # noqa: F401 (fixtures)
    Embed,
    browser,
    embed,
    events,
    open_host,
    page,
)
from tests.semantic.http_support import demo_duckdb, duck_rows, fresh_semantic_state  # noqa: F401
from tests.waiting import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.postgres]

VIEW_DELAY_S = 0.6


@pytest.fixture
def slow_views(monkeypatch) -> None:
    """Every ``/view`` answer (and the page's first view) waits before it is composed."""
    compose = pages.view_body

    def slowly(**kwargs: Any) -> dict[str, Any]:
        time.sleep(VIEW_DELAY_S)
        return compose(**kwargs)

    monkeypatch.setattr(pages, "view_body", slowly)


def settled(frame) -> bool:
    """No view request in flight or waiting, and every tile drawn."""
    return frame.locator("#embed-root").evaluate(
        "root => !root.classList.contains('is-updating') && window.embedDashboard.idle()"
        " && Object.values(window.embedDashboard.tileStatus()).every(s => s === 'ready')"
    )


def filters_changed(page) -> list[dict]:
    return [payload for name, payload in events(page) if name == "filters-changed"]


def set_filter(page, parameter: str) -> None:
    page.evaluate("p => window.embedHost.act('cube:action:set-filter', {filterUrlParameter: p})", parameter)


def test_quick_successive_changes_and_host_filters_are_all_applied_in_order(page, embed: Embed, slow_views):
    # given: Anna's dashboard (Germany only, by the access policy)
    frame = open_host(page, embed, "anna")
    wait_until(lambda: settled(frame), "the first view is drawn")
    before = len(filters_changed(page))

    # when: four changes, each made before the answer to the one before it arrives
    frame.get_by_label("Grain").select_option("quarter")
    frame.get_by_label("Measure").select_option("sales.order_count")
    set_filter(page, 'f_sales.status={"value":"completed"}')
    frame.get_by_label("Grain").select_option("year")

    # then: every change is in the state the page settles on
    wait_until(lambda: settled(frame), "the page settles after the changes")
    expected_state = {
        "filters": {"status": {"operator": "equals", "values": ["completed"]}},
        "grains": {"grain": "year"},
        "fields": {"measure": "sales.order_count"},
        "timezone": "UTC",
    }
    state = frame.locator("#embed-root").evaluate("() => window.embedDashboard.state()")
    assert state == expected_state
    # the host was told, and the last thing it was told is the final state
    told = filters_changed(page)[before:]
    assert told, "the host received no filters-changed"
    assert told[-1] == {"filterUrlParameters": ['f_sales.status={"values":["completed"]}'], "state": expected_state}
    # the controls show it
    assert frame.get_by_label("Grain").input_value() == "year"
    assert frame.get_by_label("Measure").input_value() == "sales.order_count"
    # and the tiles show it: the measure switched to orders, of completed orders only, by year
    [(completed,)] = duck_rows(
        embed.dataset,
        "SELECT count(*) FROM orders o JOIN users u ON u.id = o.user_id WHERE u.country = ? AND o.status = ?",
        ["Germany", "completed"],
    )
    assert float(frame.locator("[data-widget-id='revenue'] .kpi-value").get_attribute("title")) == completed
    [(years,)] = duck_rows(
        embed.dataset,
        "SELECT count(DISTINCT year(o.created_at)) FROM orders o JOIN users u ON u.id = o.user_id"
        " WHERE u.country = ? AND o.status = ?",
        ["Germany", "completed"],
    )
    over_time = frame.locator("[data-widget-id='revenue-over-time']").evaluate(
        "el => window.embedDashboard.rowCount(el.dataset.widgetId)"
    )
    assert over_time == years


def test_the_same_control_changed_quickly_ends_on_the_last_choice(page, embed: Embed, slow_views):
    # given
    frame = open_host(page, embed, "louis")
    wait_until(lambda: settled(frame), "the first view is drawn")

    # when: the grain changed three times, and a host filter in between
    frame.get_by_label("Grain").select_option("week")
    set_filter(page, 'f_sales.status={"values":["shipped","completed"]}')
    frame.get_by_label("Grain").select_option("quarter")
    frame.get_by_label("Grain").select_option("month")

    # then
    wait_until(lambda: settled(frame), "the page settles after the changes")
    state = frame.locator("#embed-root").evaluate("() => window.embedDashboard.state()")
    assert state["grains"] == {"grain": "month"}
    assert state["filters"] == {"status": {"operator": "equals", "values": ["shipped", "completed"]}}
    assert filters_changed(page)[-1]["state"] == state
    [(orders,)] = duck_rows(
        embed.dataset,
        "SELECT count(*) FROM orders o JOIN users u ON u.id = o.user_id WHERE u.country = ? AND o.status IN (?, ?)",
        ["France", "shipped", "completed"],
    )
    assert float(frame.locator("[data-widget-id='orders'] .kpi-value").get_attribute("title")) == orders
