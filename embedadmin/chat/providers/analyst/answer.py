"""The analyst's answer: the numbers of a result in a sentence or a short list, formatted as the model says
(currency, percent, counts), followed by what was computed; or a decline with what it can answer about."""

from __future__ import annotations

from collections.abc import Sequence
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


def format_time(value: Any, grain: str) -> str:
    """A time bucket as its grain reads: ``2024``, ``2024-Q1``, ``2024-03``, ``2024-03-04``."""
    text = str(value)
    if grain == "year":
        return text[:4]
    if grain == "quarter":
        return f"{text[:4]}-Q{(int(text[5:7]) - 1) // 3 + 1}"
    if grain == "month":
        return text[:7]
    return text[:10]


def write_answer(intent: Intent, result: dict[str, Any]) -> str:
    """The numbers of ``result`` (a ``serviceSqlApi`` result of ``intent.sql()``), then what was computed."""
    rows = result["data"]
    keys = intent.keys
    computed = intent.computed()

    def values(row: Sequence[Any]) -> str:
        shown = [format_value(row[keys + i], m) for i, m in enumerate(intent.measures)]
        if len(shown) == 1:
            return shown[0]
        return ", ".join(f"{m.title} {v}" for m, v in zip(intent.measures, shown, strict=True))

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
    lines = [f"{intent.title()}:"]
    for row in rows[:LISTED_ROWS]:
        labels = [format_time(row[0], intent.grain)] if intent.grain else []
        labels += ["(none)" if v is None else str(v) for v in row[len(labels) : keys]]
        lines.append(f"- {', '.join(labels)}: {values(row)}")
    if result["totalRows"] > LISTED_ROWS:
        lines.append(f"… and {result['totalRows'] - LISTED_ROWS} more rows.")
    lines.append(computed)
    return "\n".join(lines)


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
