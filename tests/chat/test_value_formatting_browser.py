"""The analyst's formatter (``analyst/formatting.py``, Babel's CLDR data) against the page's (``static/embed/common.js``
``Formatter.value``, Chromium's ``Intl``), value by value, in headless Chromium: a chat answer's numbers and time
buckets read exactly as the tiles read the same member's values, in each locale here.

The locales are those whose CLDR data reads the same in Babel's copy and in Chromium's ICU for these formats. Where the
two copies of CLDR differ, the text and the tiles differ too (docs/chat-api.md names them): es, it and pl leave a
four-digit number ungrouped in ICU (``1234,57``), de-AT groups with a space there, sv writes a minus sign (U+2212),
en-GB abbreviates millions as ``m``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from embedadmin.chat.providers.analyst.formatting import ValueFormatter
from tests.panel.conftest import BROWSER_ARGS

pytestmark = [pytest.mark.browser, pytest.mark.postgres]

COMMON_JS = Path(__file__).resolve().parents[2] / "static" / "embed" / "common.js"
LOCALES = ["en-US", "de-DE", "fr-FR", "ja-JP", "nl-NL", "pt-BR", "fr-CA", "ko-KR", "zh-CN"]
TIMEZONE = "Europe/Berlin"


def _named(alias: str) -> dict[str, str]:
    return {"type": "custom-numeric", "alias": alias}


def _cases() -> list[tuple[Any, dict[str, Any]]]:
    """Values and the columns they are formatted by, as a result's ``annotation`` and a tile's columns name them."""
    cases: list[tuple[Any, dict[str, Any]]] = []
    money = {"type": "number", "format": _named("currency_2"), "currency": "USD"}
    for value in [19841.88, "19841.875", 0.005, -1234.5, 1_000_000_000.5, 0, "12", None, "n/a"]:
        cases.append((value, money))
    for code in ["EUR", "JPY", "GBP", "CHF", "INR", "usd", "XYZ"]:
        cases.append((12345.678, {"type": "number", "format": "currency", "currency": code}))
    cases += [
        (-12345.678, {"type": "number", "format": "accounting", "currency": "USD"}),
        (12345.678, {"type": "number", "format": _named("currency_0"), "currency": "EUR"}),
        (12345.6789, {"type": "number", "format": _named("currency_3")}),
        (0.68125, {"type": "number", "format": _named("percent_1")}),
        (1234.5678, {"type": "number", "format": _named("number_3")}),
        (1234.5, {"type": "number", "format": _named("id")}),
        (1234567, {"type": "number", "format": _named("abbr")}),
        (1534567, {"type": "number", "format": _named("abbr_1")}),
    ]
    for value in [0.125, 0.68125, 1, 0.00005, "0.5"]:
        cases.append((value, {"type": "number", "format": "percent"}))
    for value in [12345, 1234.5678, 0.5, 1234567.125, -0.125]:
        cases += [(value, {"type": "number"}), (value, {"type": "number", "format": "number"})]
    for grain in ["year", "quarter", "month", "week", "day", "fiscal_year"]:
        for value in ["2024-01-07T15:04:05.000", "2024-11-30", "2024-03-31T23:30:00Z"]:
            cases.append((value, {"type": "time", "granularity": grain}))
    cases += [("Berlin", {"type": "string"}), (True, {"type": "boolean"}), (None, {"type": "string"})]
    return cases


@pytest.fixture(scope="module")
def page() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=BROWSER_ARGS)
        page = chromium.new_page()
        page.set_content("<!doctype html><html><body></body></html>")
        page.add_script_tag(content=COMMON_JS.read_text())
        yield page
        chromium.close()


@pytest.mark.parametrize("locale", LOCALES)
def test_the_analysts_values_read_as_the_pages_formatter_reads_them(page, locale):
    cases = _cases()

    in_page = page.evaluate(
        """([locale, timezone, cases]) => {
            const formatter = new EmbedKit.Formatter(locale, timezone);
            return cases.map(([value, column]) => formatter.value(value, column));
        }""",
        [locale, TIMEZONE, cases],
    )

    written = ValueFormatter(locale=locale, timezone=TIMEZONE)
    assert [written.value(value, column) for value, column in cases] == in_page
