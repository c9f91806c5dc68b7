"""The analyst's answer: the numbers of a result in a sentence, a short list (one group, one measure) or a Markdown
table (several groups or measures, headed by the result's column titles), followed by what was computed; or a decline
with what it can answer about. Each value is formatted by its column of the result (the member's format and currency,
a time bucket's grain) in the viewer's locale, as the dashboard's tiles read it (``formatting.py``). The embed page's
chat renders the list and the table (``static/embed/chat.js``), a table from the result's own values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from embedadmin.chat.providers.analyst.formatting import ValueFormatter
from embedadmin.chat.providers.analyst.intent import Intent
from embedadmin.chat.providers.analyst.model_phrases import Cube, Member

LISTED_ROWS = 12  # rows of a grouped answer written out; the rest are counted
SUGGESTIONS = 5  # measures and dimensions named when the analyst declines
SHARE_COLUMN = {"type": "number", "format": {"type": "custom-numeric", "alias": "percent_1"}}  # a share: 68.1%


def measure_column(member: Member) -> dict[str, Any]:
    """How a measure's values read when the result does not say (a difference computed after the query): its
    format and currency as ``serviceMeta`` gives them, as a result's ``annotation`` would."""
    column: dict[str, Any] = {"type": "number"}
    if member.shown_format is not None:
        column["format"] = member.shown_format
    if member.currency:
        column["currency"] = member.currency
    return column


def result_columns(intent: Intent, result: dict[str, Any]) -> list[dict[str, Any]]:
    """What each column of ``result`` is, in its order (the time bucket, the groups, the measures): the result's
    ``annotation`` (what the embed page formats the same values by), else what the intent knows of them."""
    given = [c for c in result.get("annotation") or [] if isinstance(c, dict)]
    if len(given) == intent.keys + len(intent.measures):
        return given
    grain = [{"type": "time", "granularity": intent.grain}] if intent.grain else []
    return grain + [{"type": g.type} for g in intent.groups] + [measure_column(m) for m in intent.measures]


def write_answer(intent: Intent, result: dict[str, Any], *, formatter: ValueFormatter | None = None) -> str:
    """The numbers of ``result`` (a ``serviceSqlApi`` result of ``intent.sql()``), then what was computed; values
    formatted by their columns in the viewer's locale (``formatter``; US English when the caller names none)."""
    shown = formatter or ValueFormatter()
    rows = result["data"]
    keys = intent.keys
    computed = intent.computed()

    if not rows:
        return f"No data matches: {intent.title()} has no rows.\n{computed}"
    if intent.computes:  # one number computed on the query's rows: a share (%) or a difference
        value = rows[0][0]
        if value is None:
            text = "no value (nothing to compare it with)"
        elif intent.share:
            text = shown.number(float(value) / 100, SHARE_COLUMN)
        else:
            text = shown.number(value, measure_column(intent.measures[0]))
        return f"{intent.title()}: {text}.\n{computed}"
    columns = result_columns(intent, result)

    def cell(row: Sequence[Any], index: int) -> str:
        if index < keys and row[index] is None:
            return "(none)"
        return shown.value(row[index], columns[index])

    if not keys:
        parts = [f"{m.title}: {cell(rows[0], i)}." for i, m in enumerate(intent.measures)]
        return " ".join(parts) + f"\n{computed}"

    lines = [f"{intent.title()}:"]
    if keys > 1 or len(intent.measures) > 1:  # a table: a column for each group and measure
        lines += _table(
            _column_titles(intent, result),
            [[cell(row, i) for i in range(len(columns))] for row in rows],
            numeric=[c.get("type") == "number" for c in columns],
        )
    else:
        lines += [f"- {cell(row, 0)}: {cell(row, 1)}" for row in rows[:LISTED_ROWS]]
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


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], *, numeric: Sequence[bool]) -> list[str]:
    """A Markdown table (pipes in cells escaped) of the first ``LISTED_ROWS`` rows, number columns aligned right."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    shown = rows[:LISTED_ROWS]
    return (
        ["", line(header), "|" + "|".join("---:" if right else "---" for right in numeric) + "|"]
        + [line(row) for row in shown]
        + [""]
    )


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
