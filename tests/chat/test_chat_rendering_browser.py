"""The dashboard chat as a viewer reads it, in real headless Chromium inside the sample host app (the demo dashboard on
acme's deployment, the built-in analyst answering as the viewer): answers as lists and tables with numbers formatted as
the tiles format them, charts titled by the members, the panel over the dashboard without squeezing a tile, reached and
closed by keyboard, and a declined question's suggestions as buttons that ask them.

Numbers are checked against SQL run directly on the demo dataset; anna is a regional viewer of Germany. The
screenshots go to ``tmp_path``, or to ``$EMBED_SCREENSHOTS_DIR`` when it is set (how
``docs/screenshots/embedded-dashboard-chat.png``, ``embedded-chat-answer-table.png`` and
``embedded-chat-suggestions.png`` are made).
"""

from __future__ import annotations

import os
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.dashboards import test_embed_browser as hosted
from tests.dashboards.test_embed_browser import Embed, events, open_host
from tests.semantic.http_support import demo_duckdb, duck_rows, fresh_semantic_state  # noqa: F401
from tests.waiting import wait_until

# The sample host app embedding acme's demo dashboard, and Chromium, as the dashboard's browser tests set them up.
browser, page, embed = hosted.browser, hosted.page, hosted.embed

pytestmark = [pytest.mark.browser, pytest.mark.postgres]

GERMANY = "JOIN users u ON u.id = o.user_id WHERE u.country = 'Germany'"
INTERNAL = re.compile(r"measure\(|date_trunc|sales\.|Users |users_", re.IGNORECASE)


def answered(page) -> int:
    return len([p for name, p in events(page) if name == "ai-query" and p["status"] != "submitted"])


def ask(page, frame, django_db_blocker, question: str | None = None, submit: Any = None) -> Any:
    """Ask ``question`` (or press ``submit``) and wait for the answer; the last assistant turn."""
    before = answered(page)
    with django_db_blocker.unblock():  # the run is answered on a thread of its own
        if question is not None:
            frame.get_by_role("textbox", name="Question").fill(question)
            frame.get_by_role("button", name="Ask", exact=True).click()
        else:
            submit()
        wait_until(lambda: answered(page) > before, "the chat's answer")
    done = [p for name, p in events(page) if name == "ai-query" and p["status"] != "submitted"][-1]
    turn = frame.locator(".chat-assistant").last
    assert done["status"] == "completed", turn.inner_text()
    return turn


def chart_texts(turn) -> list[str]:
    """The text of the turn's chart as drawn: its scene exported as SVG by Vega (the page draws on a canvas)."""
    figure = turn.locator("figure.chat-chart")
    figure.wait_for()
    figure.evaluate("f => new Promise(r => { const w = () => f.vegaView ? r() : setTimeout(w, 20); w(); })")
    svg = figure.evaluate("f => f.vegaView.toSVG()")
    return [re.sub(r"<[^>]+>", "", text) for text in re.findall(r"<text[^>]*>(.*?)</text>", svg)]


def screenshot(page, tmp_path: Path, name: str) -> None:
    """The whole host page at 1280 wide, its frame as tall as its content (a frame outside the viewport is not painted
    in a headless screenshot)."""
    folder = Path(os.environ.get("EMBED_SCREENSHOTS_DIR") or tmp_path)
    height = page.evaluate("() => document.documentElement.scrollHeight")
    page.set_viewport_size({"width": 1280, "height": height})
    page.wait_for_timeout(300)  # a resize repaints the charts: let it happen before the picture
    page.screenshot(path=str(folder / name), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})


def money(value: Any) -> str:
    return f"${Decimal(str(value)):,.2f}"


def open_chat(frame) -> Any:
    frame.get_by_role("button", name="Open chat").click()
    dialog = frame.get_by_role("dialog", name="Ask about this dashboard")
    expect(dialog).to_be_visible()
    return dialog


def test_a_list_answer_is_a_list_and_its_chart_is_titled_by_the_members(
    page, embed: Embed, django_db_blocker, tmp_path
):
    frame = open_host(page, embed, "anna")
    open_chat(frame)

    turn = ask(page, frame, django_db_blocker, "Revenue by city")

    expected = duck_rows(
        embed.dataset,
        "SELECT u.city, sum(li.quantity * li.price) FROM line_items li JOIN orders o ON o.id = li.order_id "
        f"{GERMANY} GROUP BY 1 ORDER BY 1",
    )
    answer = turn.locator(".chat-answer")
    # A list of the rows, the member named by its title ("city", not "users city"), no literal "- " bullets.
    assert answer.locator("ul > li").all_inner_texts() == [f"{city}: {money(revenue)}" for city, revenue in expected]
    assert answer.locator("p").first.inner_text() == "Revenue by city:"
    assert not any(line.startswith("- ") for line in answer.inner_text().split("\n"))
    assert answer.locator("p.chat-note").inner_text().startswith("Computed: Revenue (sum) from Sales, by city")
    # The chart's axes and tooltips are titled by the members; money ticks read as the tiles' ($40K).
    texts = chart_texts(turn)
    assert {"City", "Revenue"} <= set(texts)
    assert [city for city, _ in expected if city in texts] == [city for city, _ in expected]
    assert any(re.fullmatch(r"\$\d+K", text) for text in texts), texts
    assert not [text for text in texts if INTERNAL.search(text)], texts
    # A bar's tooltip, as the chart encodes it for the tooltip box: the members' titles and the formatted value.
    tooltip = turn.locator("figure.chat-chart").evaluate(
        """f => { const found = [];
            const walk = node => { if (node.tooltip) found.push(node.tooltip); (node.items || []).forEach(walk); };
            walk(f.vegaView.scenegraph().root); return found[0]; }"""
    )
    assert set(tooltip) == {"City", "Revenue"}
    assert tooltip["Revenue"].startswith("$")
    screenshot(page, tmp_path, "embedded-dashboard-chat.png")


def test_a_time_answer_is_labelled_for_its_grain(page, embed: Embed, django_db_blocker):
    frame = open_host(page, embed, "anna")
    open_chat(frame)

    turn = ask(page, frame, django_db_blocker, "Revenue by quarter")

    [(first_quarter, first_revenue)] = duck_rows(
        embed.dataset,
        "SELECT date_trunc('quarter', o.created_at), sum(li.quantity * li.price) FROM line_items li "
        f"JOIN orders o ON o.id = li.order_id {GERMANY} GROUP BY 1 ORDER BY 1 LIMIT 1",
    )
    items = turn.locator(".chat-answer ul > li").all_inner_texts()
    quarter = f"Q{(first_quarter.month - 1) // 3 + 1} {first_quarter.year}"
    assert items[0] == f"{quarter}: {money(first_revenue)}"
    texts = chart_texts(turn)
    assert {"Ordered at (quarter)", "Revenue"} <= set(texts)
    ticks = [text for text in texts if re.fullmatch(r"Q[1-4] \d{4}", text)]
    assert quarter in ticks
    assert not [text for text in texts if INTERNAL.search(text)], texts


def test_a_tabular_answer_is_a_table_formatted_as_the_tiles_in_the_viewers_locale(
    page, embed: Embed, django_db_blocker, tmp_path
):
    frame = open_host(page, embed, "anna", locale="de-DE")
    open_chat(frame)

    turn = ask(page, frame, django_db_blocker, "Orders and order value by city")

    expected = duck_rows(
        embed.dataset, f"SELECT u.city, count(*), sum(o.amount) FROM orders o {GERMANY} GROUP BY 1 ORDER BY 1"
    )
    table = turn.locator(".chat-answer table")
    assert table.locator("thead th").all_inner_texts() == ["City", "Orders", "Order value"]
    rows = [row.locator("td").all_inner_texts() for row in table.locator("tbody tr").all()]
    # Each cell from the query's own value, formatted by the page's formatter in the viewer's locale (de-DE).
    euro_style = frame.locator("#embed-root").evaluate(
        "(root, values) => values.map(v => new Intl.NumberFormat('de-DE', {style: 'currency', currency: 'USD'})"
        ".format(v))",
        [float(amount) for _, _, amount in expected],
    )
    assert rows == [[city, str(count), shown] for (city, count, _), shown in zip(expected, euro_style, strict=True)]
    assert "|" not in turn.locator(".chat-answer").inner_text()
    # The same figure as the Top cities tile shows for the same city.
    munich = frame.locator("[data-widget-id='top-cities'] tbody tr", has_text="Munich").locator("td").last
    assert munich.inner_text() in [shown for (city, _, _), shown in zip(expected, euro_style, strict=True)]
    screenshot(page, tmp_path, "embedded-chat-answer-table.png")


def test_a_list_answer_reads_its_numbers_as_the_tiles_in_the_viewers_locale(page, embed: Embed, django_db_blocker):
    frame = open_host(page, embed, "anna", locale="de-DE")
    wait_until(lambda: frame.locator("#embed-root").evaluate("() => window.embedDashboard.loaded()"), "the tiles")
    open_chat(frame)

    turn = ask(page, frame, django_db_blocker, "Revenue by city")

    expected = duck_rows(
        embed.dataset,
        "SELECT u.city, sum(li.quantity * li.price) FROM line_items li JOIN orders o ON o.id = li.order_id "
        f"{GERMANY} GROUP BY 1 ORDER BY 1",
    )
    # The amounts as de-DE writes dollars (Intl in the page, independently of either formatter): 38.157,37 $.
    german = frame.locator("#embed-root").evaluate(
        "(root, values) => values.map(v => new Intl.NumberFormat('de-DE', {style: 'currency', currency: 'USD'})"
        ".format(v))",
        [float(revenue) for _, revenue in expected],
    )
    items = turn.locator(".chat-answer ul > li").all_inner_texts()
    assert items == [f"{city}: {shown}" for (city, _), shown in zip(expected, german, strict=True)]
    assert all(re.fullmatch(r"[\d.]+,\d\d\u00a0\$", item.split(": ", 1)[1]) for item in items), items
    # The Top cities tile shows the same member's value for each of its cities: the list reads as its cells.
    tile = {
        row.locator("td").first.inner_text(): row.locator("td").last.inner_text()
        for row in frame.locator("[data-widget-id='top-cities'] tbody tr").all()
    }
    listed = dict(item.split(": ", 1) for item in items)
    assert tile
    assert {city: listed[city] for city in tile} == tile

    # A time bucket's label as the page labels the month (Intl's short month and year in de-DE: "Jan. 2024").
    months = ask(page, frame, django_db_blocker, "Revenue by month")
    [(first_month, first_revenue)] = duck_rows(
        embed.dataset,
        "SELECT date_trunc('month', o.created_at), sum(li.quantity * li.price) FROM line_items li "
        f"JOIN orders o ON o.id = li.order_id {GERMANY} GROUP BY 1 ORDER BY 1 LIMIT 1",
    )
    label, amount = frame.locator("#embed-root").evaluate(
        """(root, [year, month, value]) => [
            new Intl.DateTimeFormat('de-DE', {year: 'numeric', month: 'short', timeZone: 'UTC'})
                .format(new Date(Date.UTC(year, month - 1, 1))),
            new Intl.NumberFormat('de-DE', {style: 'currency', currency: 'USD'}).format(value)]""",
        [first_month.year, first_month.month, float(first_revenue)],
    )
    assert months.locator(".chat-answer ul > li").first.inner_text() == f"{label}: {amount}"


@pytest.mark.parametrize("tag", ["de-DE-u-nu-latn", "de-DE-x-host", "DE-de", "de-DE-1996"])
def test_a_host_locale_with_extensions_still_lets_the_viewer_ask(page, embed: Embed, django_db_blocker, tag):
    """A host may set any locale Chromium takes, extensions and private use included: the chat asks in its language,
    script and region (what the server reads a number's format by), and the answer comes, in German."""
    frame = open_host(page, embed, "anna")
    wait_until(lambda: frame.locator("#embed-root").evaluate("() => window.embedDashboard.loaded()"), "the tiles")
    page.evaluate("tag => window.embedHost.act('cube:action:set-locale', {locale: tag})", tag)
    open_chat(frame)

    turn = ask(page, frame, django_db_blocker, "Revenue by city")

    items = turn.locator(".chat-answer ul > li").all_inner_texts()
    assert items
    assert all(re.fullmatch(r"[\d.]+,\d\d\u00a0\$", item.split(": ", 1)[1]) for item in items), items


@pytest.mark.parametrize(("zone", "named"), [("Asia/Tokyo", "Asia/Tokyo"), ("asia/tokyo", "Asia/Tokyo")])
def test_the_chat_reads_dates_in_the_zone_the_host_sets_for_the_tiles(
    page, embed: Embed, django_db_blocker, zone, named
):
    """Any spelling of a zone Chromium takes (it reads names without regard to case) reaches the server by its
    canonical IANA name."""
    frame = open_host(page, embed, "anna")
    wait_until(lambda: frame.locator("#embed-root").evaluate("() => window.embedDashboard.loaded()"), "the tiles")
    page.evaluate("zone => window.embedHost.act('cube:action:set-timezone', {timezone: zone})", zone)
    open_chat(frame)

    turn = ask(page, frame, django_db_blocker, "Revenue by month")

    assert turn.locator(".chat-answer").inner_text().rstrip().endswith(f"(time zone {named}).")


def tile_boxes(frame) -> dict[str, Any]:
    """Each tile's box and whether its title is cut short."""
    return frame.locator("#embed-root").evaluate(
        """root => Object.fromEntries(Array.from(root.querySelectorAll('[data-widget-id]')).map(tile => {
            const box = tile.getBoundingClientRect();
            const title = tile.querySelector('.tile-title');
            return [tile.dataset.widgetId, {x: box.x, y: box.y, width: box.width, height: box.height,
                    clipped: !!title && title.scrollWidth > title.clientWidth}];
        }))"""
    )


def test_the_chat_lies_over_the_dashboard_without_squeezing_a_tile_and_keyboard_reaches_it(page, embed: Embed):
    frame = open_host(page, embed, "anna")
    wait_until(lambda: frame.locator("#embed-root").evaluate("() => window.embedDashboard.loaded()"), "the tiles")
    before = tile_boxes(frame)
    assert len(before) >= 6
    assert not [tile for tile, box in before.items() if box["clipped"]]

    launcher = frame.get_by_role("button", name="Open chat")
    launcher.focus()
    page.keyboard.press("Enter")

    dialog = frame.get_by_role("dialog", name="Ask about this dashboard")
    expect(dialog).to_be_visible()
    expect(frame.get_by_role("textbox", name="Question")).to_be_focused()
    expect(frame.locator(".chat-launcher")).to_have_attribute("aria-expanded", "true")
    # The grid keeps its width: every tile where it was, as wide as it was, no title cut short.
    assert tile_boxes(frame) == before

    # The panel is resizable by keyboard from its edge; the tiles stay put.
    width = dialog.bounding_box()["width"]
    handle = frame.get_by_role("separator", name="Resize chat")
    handle.focus()
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    assert dialog.bounding_box()["width"] == width + 80
    assert handle.get_attribute("aria-valuenow") == str(round(width + 80))
    assert tile_boxes(frame) == before

    # Escape closes it and gives the focus back to the launcher.
    frame.get_by_role("textbox", name="Question").focus()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(launcher).to_be_focused()
    expect(launcher).to_have_attribute("aria-expanded", "false")
    assert tile_boxes(frame) == before


def test_a_suggestion_button_asks_its_question(page, embed: Embed, django_db_blocker, tmp_path):
    frame = open_host(page, embed, "anna")
    open_chat(frame)
    declined = ask(page, frame, django_db_blocker, "Show revenu by city")
    assert "I did not understand 'revenu'" in declined.locator(".chat-answer").inner_text()
    offered = declined.get_by_role("group", name="Suggested questions").get_by_role("button")
    assert offered.all_inner_texts() == ["Show revenue by city"]
    screenshot(page, tmp_path, "embedded-chat-suggestions.png")

    def press() -> None:
        offered.first.focus()
        page.keyboard.press("Enter")

    answer = ask(page, frame, django_db_blocker, submit=press)

    assert frame.locator(".chat-user").last.inner_text() == "Show revenue by city"
    assert answer.locator(".chat-answer ul > li").count() == len(
        duck_rows(embed.dataset, f"SELECT DISTINCT u.city FROM orders o {GERMANY}")
    )


def test_answer_text_becomes_nodes_never_markup(page, embed: Embed):
    frame = open_host(page, embed, "anna")
    text = (
        "## Totals\n"
        "The **best** city is *Munich*, see `sales.revenue`.\n"
        "1. first\n2. second\n\n"
        "| Name | Amount |\n|---|---:|\n| a \\| b | 1 |\n\n"
        '<img src="x" onerror="window.pwned = 1"> <script>window.pwned = 2</script> [link](javascript:alert(1))'
    )

    shown = frame.locator("#embed-root").evaluate(
        """(root, text) => {
            const holder = document.createElement('div');
            holder.appendChild(EmbedKit.Chat.renderAnswer(text, null, new EmbedKit.Formatter('en-US', 'UTC')));
            return {
                tags: Array.from(holder.querySelectorAll('*')).map(node => node.tagName.toLowerCase()),
                heading: holder.querySelector('h3').textContent,
                strong: holder.querySelector('strong').textContent,
                em: holder.querySelector('em').textContent,
                code: holder.querySelector('code').textContent,
                items: Array.from(holder.querySelectorAll('ol > li')).map(li => li.textContent),
                cells: Array.from(holder.querySelectorAll('td')).map(td => td.textContent),
                last: holder.lastChild.textContent,
                pwned: window.pwned === undefined ? null : window.pwned,
            };
        }""",
        text,
    )

    assert shown["heading"] == "Totals"
    assert (shown["strong"], shown["em"], shown["code"]) == ("best", "Munich", "sales.revenue")
    assert shown["items"] == ["first", "second"]
    assert shown["cells"] == ["a | b", "1"]
    # Markup in the text is text: no element but the subset's, nothing run.
    assert set(shown["tags"]) <= {
        "h3",
        "p",
        "strong",
        "em",
        "code",
        "ol",
        "li",
        "div",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
    }
    assert shown["last"].startswith('<img src="x" onerror="window.pwned = 1"> <script>')
    assert shown["pwned"] is None
