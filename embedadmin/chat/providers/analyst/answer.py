"""The analyst's answer: the numbers of a result in a sentence, a short list (one group, one measure) or a Markdown
table (several groups or measures, headed by the result's column titles), formatted as the model says (currency,
percent, counts), followed by what was computed; or a decline with what it can answer about. The embed page's chat
renders the list and the table (``static/embed/chat.js``), a table from the result's own values."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from embedadmin.chat.providers.analyst.intent import Intent
from embedadmin.chat.providers.analyst.model_phrases import Cube, Member

LISTED_ROWS = 12  # rows of a grouped answer written out; the rest are counted
SUGGESTIONS = 5  # measures and dimensions named when the analyst declines
CURRENCY_SIGNS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥"}


def format_value(value: Any, member: Member) -> str:
    """A measure's value as its format reads: ``$1,234.56``, ``68.1%``, ``12,345``."""
    if value is None:
        return "no value"
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        return str(value)
    if member.is_percent:
        return f"{number * 100:,.1f}%"
    if member.is_money:
        text = f"{number:,.2f}"
        sign = CURRENCY_SIGNS.get(member.currency.upper(), f"{member.currency.upper()} " if member.currency else "")
        return f"{sign}{text}"
    if member.is_count or number == number.to_integral_value():
        return f"{number:,.0f}"
    if member.format.startswith("number_") and member.format[7:].isdigit():
        return f"{number:,.{int(member.format[7:])}f}"
    return f"{number:,.2f}"


MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def format_time(value: Any, grain: str) -> str:
    """A time bucket as its grain reads, as the dashboard's charts label it: ``2024``, ``Q1 2024``, ``Jan 2024``,
    ``2024-W05`` (ISO weeks, as Cube's), ``2024-03-04``."""
    text = str(value)
    try:
        day = date.fromisoformat(text[:10])
    except ValueError:
        return text
    if grain == "year":
        return str(day.year)
    if grain == "quarter":
        return f"Q{(day.month - 1) // 3 + 1} {day.year}"
    if grain == "month":
        return f"{MONTHS[day.month - 1]} {day.year}"
    if grain == "week":
        year, week, _ = day.isocalendar()
        return f"{year}-W{week:02d}"
    return text[:10]


def write_answer(intent: Intent, result: dict[str, Any]) -> str:
    """The numbers of ``result`` (a ``serviceSqlApi`` result of ``intent.sql()``), then what was computed."""
    rows = result["data"]
    keys = intent.keys
    computed = intent.computed()

    if not rows:
        return f"No data matches: {intent.title()} has no rows.\n{computed}"
    if intent.computes:  # one number computed on the query's rows: a share (%) or a difference
        value = rows[0][0]
        if value is None:
            shown = "no value (nothing to compare it with)"
        elif intent.share:
            shown = f"{Decimal(str(value)):,.1f}%"
        else:
            shown = format_value(value, intent.measures[0])
        return f"{intent.title()}: {shown}.\n{computed}"
    if not keys:
        parts = [f"{m.title}: {format_value(rows[0][i], m)}." for i, m in enumerate(intent.measures)]
        return " ".join(parts) + f"\n{computed}"

    def labels(row: Sequence[Any]) -> list[str]:
        shown = [format_time(row[0], intent.grain)] if intent.grain else []
        return shown + ["(none)" if v is None else str(v) for v in row[len(shown) : keys]]

    lines = [f"{intent.title()}:"]
    if keys > 1 or len(intent.measures) > 1:  # a table: a column for each group and measure
        lines += _table(
            _column_titles(intent, result),
            [labels(row) + [format_value(row[keys + i], m) for i, m in enumerate(intent.measures)] for row in rows],
        )
    else:
        lines += [f"- {labels(row)[0]}: {format_value(row[1], intent.measures[0])}" for row in rows[:LISTED_ROWS]]
    if result["totalRows"] > LISTED_ROWS:
        lines.append(f"… and {result['totalRows'] - LISTED_ROWS} more rows.")
    lines.append(computed)
    return "\n".join(lines)


def _column_titles(intent: Intent, result: dict[str, Any]) -> list[str]:
    """The result's column titles (``serviceSqlApi``'s ``annotation``: the titles its chart and the embed page's table
    show), else the intent's own."""
    given = [c.get("title") for c in result.get("annotation") or [] if isinstance(c, dict)]
    if len(given) == intent.keys + len(intent.measures) and all(isinstance(t, str) and t for t in given):
        return [str(t) for t in given]
    grain = [(intent.grain_title or intent.grain or "").capitalize()] if intent.grain else []
    return grain + [g.title for g in intent.groups] + [m.title for m in intent.measures]


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table (pipes in cells escaped) of the first ``LISTED_ROWS`` rows, numbers aligned right."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    shown = rows[:LISTED_ROWS]
    numeric = [bool(shown) and all(_is_number(row[i]) for row in shown) for i in range(len(header))]
    return (
        ["", line(header), "|" + "|".join("---:" if right else "---" for right in numeric) + "|"]
        + [line(row) for row in shown]
        + [""]
    )


def _is_number(text: str) -> bool:
    return bool(text) and text.lstrip("$€£¥-").replace(",", "").replace(".", "", 1).rstrip("%").isdigit()


def capabilities(cubes: Sequence[Cube]) -> str:
    """What the analyst can answer about: a few measures and dimensions, views first."""
    measures: list[str] = []
    dimensions: list[str] = []
    for cube in sorted(cubes, key=lambda c: not c.is_view):
        for member in cube.members:
            bucket = measures if member.is_measure else dimensions
            if member.title not in bucket:
                bucket.append(member.title)
    if not measures:
        return "The data model has no measure I can use."
    text = f"I can answer about measures such as {', '.join(measures[:SUGGESTIONS])}"
    if dimensions:
        text += f", by dimensions such as {', '.join(d.lower() for d in dimensions[:SUGGESTIONS])}"
    return text + "."
