"""The built-in analyst's answers in the viewer's locale: numbers and time buckets formatted by their result column
(the member's format and currency, the bucket's grain) as the dashboard's tiles read them (``analyst/formatting.py``;
``test_value_formatting_browser.py`` holds it to the page's own formatter in Chromium). The locale comes with the
turn (``context.locale``, a checked language tag), else from an embed session, else it is US English."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from embedadmin.chat.models import Run, Thread
from embedadmin.chat.providers.analyst.formatting import ValueFormatter
from embedadmin.chat.runtime import viewer_locale
from embedadmin.directory.services import group_create
from tests.chat.analyst.test_context_filters import ask
from tests.chat.conftest import SESSION
from tests.chat.test_dashboard_context import embed_header, final_content
from tests.chat.test_tools import demo_deployment
from tests.semantic.http_support import demo_duckdb, duck_rows, fresh_semantic_state

__all__ = ["demo_deployment", "demo_duckdb", "fresh_semantic_state"]  # fixtures

NBSP, NNBSP = "\u00a0", "\u202f"
MONEY = {"type": "number", "format": {"type": "custom-numeric", "value": "$,.2~f", "alias": "currency_2"}}
USD = {**MONEY, "currency": "USD"}
EUR = {"type": "number", "format": "currency", "currency": "EUR"}
PERCENT = {"type": "number", "format": "percent"}
COUNT = {"type": "number"}
MONTH = {"type": "time", "granularity": "month"}
QUARTER = {"type": "time", "granularity": "quarter"}
REVENUE_BY_CITY = (
    "SELECT u.city, sum(li.quantity * li.price) FROM line_items li JOIN orders o ON o.id = li.order_id "
    "JOIN users u ON u.id = o.user_id GROUP BY 1 ORDER BY 1"
)


@pytest.mark.parametrize(
    ("locale", "value", "column", "shown"),
    [
        # a currency: the locale's symbol, its place and its separators
        ("en-US", 19841.88, USD, "$19,841.88"),
        ("de-DE", 19841.88, USD, f"19.841,88{NBSP}$"),
        ("fr-FR", 19841.88, USD, f"19{NNBSP}841,88{NBSP}$US"),
        ("ja-JP", 19841.88, USD, "$19,841.88"),
        ("en-US", "1234.5", EUR, "€1,234.50"),
        ("de-DE", "1234.5", EUR, f"1.234,50{NBSP}€"),
        ("fr-FR", "1234.5", EUR, f"1{NNBSP}234,50{NBSP}€"),
        ("ja-JP", "1234.5", EUR, "€1,234.50"),
        # a percent: the value is a fraction, as Cube's percent format (d3's %) reads it
        ("en-US", 0.125, PERCENT, "12.5%"),
        ("de-DE", 0.125, PERCENT, f"12,5{NBSP}%"),
        ("fr-FR", 0.125, PERCENT, f"12,5{NBSP}%"),
        ("ja-JP", 0.125, PERCENT, "12.5%"),
        # a count: grouped, no decimals
        ("en-US", 1234567, COUNT, "1,234,567"),
        ("de-DE", 1234567, COUNT, "1.234.567"),
        ("fr-FR", 1234567, COUNT, f"1{NNBSP}234{NNBSP}567"),
        ("ja-JP", 1234567, COUNT, "1,234,567"),
        # a time bucket at month and at quarter grain (the SQL API's wall-clock text)
        ("en-US", "2024-03-01T00:00:00.000", MONTH, "Mar 2024"),
        ("de-DE", "2024-03-01T00:00:00.000", MONTH, "März 2024"),
        ("fr-FR", "2024-03-01T00:00:00.000", MONTH, "mars 2024"),
        ("ja-JP", "2024-03-01T00:00:00.000", MONTH, "2024年3月"),
        ("en-US", "2024-01-01T00:00:00.000", MONTH, "Jan 2024"),
        ("de-DE", "2024-01-01T00:00:00.000", MONTH, "Jan. 2024"),
        ("en-US", "2024-04-01T00:00:00.000", QUARTER, "Q2 2024"),
        ("de-DE", "2024-04-01T00:00:00.000", QUARTER, "Q2 2024"),
        ("fr-FR", "2024-04-01T00:00:00.000", QUARTER, "Q2 2024"),
        ("ja-JP", "2024-04-01T00:00:00.000", QUARTER, "Q2 2024年"),
    ],
)
def test_a_value_reads_as_its_format_says_in_the_locale(locale, value, column, shown):
    assert ValueFormatter(locale=locale).value(value, column) == shown


@pytest.mark.parametrize(
    ("column", "value", "shown"),
    [
        # the decimals a named format gives (currency_0, number_3, percent_1), trailing zeros of a plain one trimmed
        ({**EUR, "format": {"type": "custom-numeric", "alias": "currency_0"}}, 1234.5, f"1.235{NBSP}€"),
        ({"type": "number", "format": {"type": "custom-numeric", "alias": "number_3"}}, 1.23456, "1,235"),
        ({"type": "number", "format": {"type": "custom-numeric", "alias": "percent_1"}}, 0.68125, f"68,1{NBSP}%"),
        ({"type": "number", "format": "number"}, 12.5, "12,5"),
        ({"type": "number", "format": {"type": "custom-numeric", "alias": "id"}}, 1234.5, "1235"),
        # a currency without its code is in dollars, as on the tiles; a code CLDR has no symbol for is written out
        ({"type": "number", "format": "currency"}, 3, f"3,00{NBSP}$"),
        ({"type": "number", "format": "currency", "currency": "XYZ"}, 3, f"3,00{NBSP}XYZ"),
        # halves round away from zero, as Intl rounds (not to even)
        (USD, "0.125", f"0,13{NBSP}$"),
        (USD, -0.125, f"-0,13{NBSP}$"),
        # no value, and what is no number, as the page shows them
        (USD, None, "\u2013"),
        (USD, "n/a", "n/a"),
        ({"type": "string"}, "München", "München"),
        ({"type": "boolean"}, True, "true"),
        # a week is ISO's, in every locale; a grain the page has no label for reads as a day
        ({"type": "time", "granularity": "week"}, "2024-01-29T00:00:00.000", "2024-W05"),
        ({"type": "time", "granularity": "fiscal_year"}, "2024-07-01T00:00:00.000", "1. Juli 2024"),
        ({"type": "time", "granularity": "year"}, "2024-01-01", "2024"),
    ],
)
def test_formats_decimals_and_edges_as_the_tiles(column, value, shown):
    assert ValueFormatter(locale="de-DE").value(value, column) == shown


def test_a_locale_without_data_reads_as_its_language_else_as_us_english():
    assert ValueFormatter(locale="de-XX").value(1234.5, USD) == f"1.234,50{NBSP}$"
    assert ValueFormatter(locale="xx-YY").value(1234.5, USD) == "$1,234.50"


def test_a_time_with_an_offset_is_read_in_the_viewers_time_zone():
    late = "2024-03-31T23:30:00Z"  # already April in Berlin
    assert ValueFormatter(locale="en-US", timezone="Europe/Berlin").value(late, MONTH) == "Apr 2024"
    assert ValueFormatter(locale="en-US").value(late, MONTH) == "Mar 2024"


@pytest.mark.parametrize(
    ("context", "security_context", "locale"),
    [
        ({"locale": "de-DE"}, {}, "de-DE"),
        # the turn's locale (the page's, which follows the URL and the host) over the embed session's own
        ({"locale": "ja-JP"}, {"embed": {"settings": {"locale": "fr-FR"}}}, "ja-JP"),
        ({}, {"embed": {"settings": {"locale": "fr-FR"}}}, "fr-FR"),
        (None, None, "en-US"),
        # never anything but a language tag
        ({"locale": "de-DE; DROP"}, {"embed": {"settings": {"locale": ["x"]}}}, "en-US"),
        ({}, {"embed": "fr-FR"}, "en-US"),
    ],
)
def test_the_viewers_locale_is_the_turns_else_the_embed_sessions_else_us_english(context, security_context, locale):
    assert viewer_locale(context, security_context) == locale


# --- through the analyst and the Chat API, on the demo dataset ------------------------------------------------


def german_money(value: Any) -> str:
    """An amount as de-DE writes dollars: ``19.841,88 $`` (written here without CLDR, to check it)."""
    text = f"{Decimal(str(value)):,.2f}".replace(",", "_").replace(".", ",").replace("_", ".")
    return f"{text}{NBSP}$"


@pytest.mark.django_db(transaction=True)
def test_a_list_answer_is_written_in_the_viewers_locale(demo_deployment, demo_duckdb):
    turn = ask(demo_deployment, "Revenue by city", locale="de-DE")

    expected = duck_rows(demo_duckdb, REVENUE_BY_CITY)
    lines = turn.answer.split("\n")
    assert lines[0] == "Revenue by city:"
    assert lines[1:13] == [f"- {city}: {german_money(revenue)}" for city, revenue in expected[:12]]


@pytest.mark.django_db(transaction=True)
def test_a_table_a_percent_and_a_time_bucket_in_the_viewers_locale(demo_deployment, demo_duckdb):
    table = ask(demo_deployment, "Orders and completion rate by month in 2024", locale="de-DE")
    [(orders, rate)] = duck_rows(
        demo_duckdb,
        "SELECT count(*), 1.0 * count(*) FILTER (WHERE status = 'completed') / count(*) FROM orders "
        "WHERE created_at >= TIMESTAMP '2024-03-01' AND created_at < TIMESTAMP '2024-04-01'",
    )
    march = [line for line in table.answer.split("\n") if line.startswith("| März 2024 |")]
    german_count = f"{orders:,}".replace(",", ".")
    german_rate = f"{Decimal(str(rate)) * 100:.2f}".rstrip("0").rstrip(".").replace(".", ",")
    assert march == [f"| März 2024 | {german_count} | {german_rate}{NBSP}% |"]
    assert "|---|---:|---:|" in table.answer  # the numbers' columns are aligned right, whatever the locale

    quarters = ask(demo_deployment, "Revenue by quarter in 2024", locale="ja-JP")
    assert quarters.answer.split("\n")[1].startswith("- Q1 2024年: $")


@pytest.mark.django_db(transaction=True)
def test_the_chat_api_writes_the_turns_locale_and_us_english_without_one(demo_deployment, demo_duckdb, chat):
    group_create(account=demo_deployment.account, embed_tenant=None, name="admin")
    analyst = {**SESSION, "groups": ["admin"]}  # who may see the cities
    german = chat.stream({"input": "Revenue by city", "sessionSettings": analyst, "context": {"locale": "de-DE"}})
    plain = chat.stream({"input": "Revenue by city", "sessionSettings": analyst})

    [(city, revenue), *_] = duck_rows(demo_duckdb, REVENUE_BY_CITY)
    assert f"- {city}: {german_money(revenue)}" in final_content(german).split("\n")
    assert f"- {city}: ${Decimal(str(revenue)):,.2f}" in final_content(plain).split("\n")
    assert [run.context for run in Run.objects.order_by("id")] == [{"locale": "de-DE"}, {}]


@pytest.mark.django_db(transaction=True)
def test_an_embed_viewer_reads_their_sessions_locale_unless_the_page_says_another(demo_deployment, demo_duckdb, chat):
    headers = embed_header(demo_deployment, externalId="ann", groups=["admin"], settings={"locale": "de-DE"})
    [(city, revenue), *_] = duck_rows(demo_duckdb, REVENUE_BY_CITY)

    own = chat.stream({"input": "Revenue by city"}, headers=headers)
    page = chat.stream({"input": "Revenue by city", "context": {"locale": "en-US"}}, headers=headers)

    assert f"- {city}: {german_money(revenue)}" in final_content(own).split("\n")
    assert f"- {city}: ${Decimal(str(revenue)):,.2f}" in final_content(page).split("\n")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("locale", "message"),
    [
        ("de_DE", "context.locale: must be a BCP-47 language tag such as en-US"),
        ("<script>", "context.locale: must be a BCP-47 language tag such as en-US"),
        ("", "context.locale: This field may not be blank."),
        (["de-DE"], "context.locale: Not a valid string."),
        ("x" * 36, "context.locale: Ensure this field has no more than 35 characters."),
    ],
)
def test_a_locale_that_is_no_language_tag_is_a_400_and_writes_nothing(chat, locale, message):
    result = chat.stream({"input": "Revenue by city", "sessionSettings": SESSION, "context": {"locale": locale}})

    assert result.status == 400
    assert result.lines == [{"error": message}]
    assert (Thread.objects.count(), Run.objects.count()) == (0, 0)
