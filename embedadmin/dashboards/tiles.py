"""How a dashboard tile is drawn and exported: the one contract the embed page renders and CSV export writes.

``viewstate`` composes a tile's query for a state; this module composes what is shown of it (docs/dashboards.md,
"Tiles"), from the report's visualization, the FIELD switches and the member descriptions the viewer's
``/v1/meta`` gives:

- **columns**: the tile's data, in order, each ``{member, key, title, type, format?, currency?, granularity?}``
  (``key``: the member's key in a ``/v1/load`` row; ``title``: the member's reading title). A table shows exactly
  them, CSV export writes exactly them (same order, same titles), and the page formats a cell by its column;
- **spec**: per kind, a KPI's ``measure`` column, a pivot table's ``rows``/``columns``/``values`` columns with
  the queries of its totals, or a Vega-Lite spec ready to draw: member fields as escaped result keys, and, unless
  the report's spec says otherwise, axis, legend and tooltip titles from member titles, values formatted by the
  member's format (axes abbreviate: 1.2M), time axes ticked and labelled by the query's grain (Q1 2024, 2024-W05);
- **title**: the report's (or the widget's) title, following the FIELD switches (:func:`switched_title`).

Formatting is named here and done in the page, in the viewer's locale, by one formatter (``static/embed/common.js``
``Formatter``): Vega calls it through the expression function :data:`CHART_FORMAT`, KPIs, tables and pivots call it
directly, so an axis, a tooltip and a table cell of one member read the same.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from typing import Any

VEGA_LITE_SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
# The page's Vega expression function that formats a value by a column's format (Vega-Lite's custom formatType).
CHART_FORMAT = "embedFormat"
PREDEFINED_GRAINS = ("second", "minute", "hour", "day", "week", "month", "quarter", "year")
# Measures whose value over a group of rows is the sum of their values over its parts (a pivot's totals are queried
# all the same: a row may fall in several groups through a one-to-many join).
ADDITIVE_AGGREGATIONS = frozenset({"sum", "count"})
# A time axis of a grain: the tick interval Vega steps by, the length of one grain in days, the room one label
# needs (px), and the steps (in intervals) it may take, the smallest that keeps labels apart being used.
_GRAIN_TICKS: dict[str, tuple[str, float, int, tuple[int, ...]]] = {
    "year": ("year", 365.25, 44, (1, 2, 5, 10, 25, 50, 100)),
    "quarter": ("month", 30.44, 60, (3, 6, 12, 24, 60, 120)),
    "month": ("month", 30.44, 64, (1, 2, 3, 6, 12, 24, 60)),
    "week": ("week", 7.0, 72, (1, 2, 4, 8, 13, 26, 52)),
    "day": ("day", 1.0, 84, (1, 2, 7, 14)),
}
# A view with more than one scale per channel: its scales are not named "x" and "y", so its time axes keep Vega's
# own ticks.
_COMPOSED = ("facet", "repeat", "concat", "hconcat", "vconcat")
_FACET_CHANNELS = ("row", "column", "facet")


# --- query shape -------------------------------------------------------------------------------------------


def time_dimensions(query: dict[str, Any]) -> list[dict[str, Any]]:
    """A query's time dimension objects that name their member (the others are refused when it is validated)."""
    found = query.get("timeDimensions") or []
    return [td for td in found if isinstance(td, dict) and isinstance(td.get("dimension"), str)]


def result_keys(query: dict[str, Any]) -> dict[str, str]:
    """Member -> the key its values have in a ``/v1/load`` row (a grouped time dimension: ``member.grain``)."""
    keys = {m: m for m in _named(query)}
    for td in time_dimensions(query):
        if td.get("granularity"):
            keys[td["dimension"]] = f"{td['dimension']}.{td['granularity']}"
    return keys


def _named(query: dict[str, Any]) -> list[str]:
    names = [m for part in ("measures", "dimensions") for m in query.get(part) or [] if isinstance(m, str)]
    return names + [td["dimension"] for td in time_dimensions(query)]


def output_members(query: dict[str, Any]) -> list[str]:
    """The members of a query's ``/v1/load`` rows, in order: dimensions, grouped time dimensions, measures."""
    names = [m for m in query.get("dimensions") or [] if isinstance(m, str)]
    names += [td["dimension"] for td in time_dimensions(query) if td.get("granularity")]
    names += [m for m in query.get("measures") or [] if isinstance(m, str)]
    return list(dict.fromkeys(names))


def output_keys(query: dict[str, Any]) -> list[str]:
    """The keys of a query's ``/v1/load`` rows, in :func:`output_members` order."""
    keys = result_keys(query)
    return [keys[m] for m in output_members(query)]


# --- titles and columns ------------------------------------------------------------------------------------


def member_title(member: str, described: Mapping[str, Any] | None) -> str:
    """What a tile calls a member: the title a person reads it by (``readingTitle`` of ``/v1/meta`` composed for
    display: ``semantic.modeling.reading_titles``), else its short title, else its title, else its name made readable
    (``sales.order_count`` -> "Order count")."""
    for key in ("readingTitle", "shortTitle", "title"):
        value = (described or {}).get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    local = member.rsplit(".", 1)[-1].replace("_", " ").strip()
    return local[:1].upper() + local[1:]


def grain_title(grain: str, described: Mapping[str, Any] | None) -> str:
    """A granularity as a control offers it: a custom one's title from the model, a predefined one capitalised."""
    for item in (described or {}).get("granularities") or []:
        if isinstance(item, dict) and item.get("name") == grain and isinstance(item.get("title"), str):
            return str(item["title"])
    return grain.replace("_", " ").capitalize()


def _member_type(member: str, query: dict[str, Any], described: Mapping[str, Any]) -> str:
    given = described.get("type")
    if isinstance(given, str) and given:
        return given
    if member in (query.get("measures") or []):
        return "number"
    if any(td["dimension"] == member for td in time_dimensions(query)):
        return "time"
    return "string"


def tile_column(member: str, *, query: dict[str, Any], members: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """One column of a tile: what it shows of ``member`` and how its values read."""
    described = members.get(member) or {}
    key = result_keys(query).get(member, member)
    column: dict[str, Any] = {
        "member": member,
        "key": key,
        "title": member_title(member, described),
        "type": _member_type(member, query, described),
    }
    for name in ("format", "currency"):
        if described.get(name) is not None:
            column[name] = described[name]
    if key != member:
        column["granularity"] = key[len(member) + 1 :]
    if column["type"] == "number" and member in (query.get("measures") or []):
        column["additive"] = described.get("aggType") in ADDITIVE_AGGREGATIONS
    return column


def _columns(names: list[str], *, query: dict[str, Any], members: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [tile_column(name, query=query, members=members) for name in dict.fromkeys(names)]


def switched_title(
    title: str, *, report_members: list[str], switches: Mapping[str, str], members: Mapping[str, dict[str, Any]]
) -> str:
    """A tile's title for the FIELD switches in force: where it names a switched member of the report (its reading
    title, short title or title, as a whole word, any case), that name is replaced by the new member's title, its first
    letter in the case of the name it replaces ("Revenue over time" -> "Orders over time", "Monthly revenue" ->
    "Monthly orders"). A title that does not name the member is kept."""
    for old, new in switches.items():
        if old not in report_members or not title:
            continue
        described = members.get(old) or {}
        written = (described.get(key) for key in ("shortTitle", "title"))
        names = {member_title(old, described), *(v for v in written if isinstance(v, str) and v)}
        replacement = member_title(new, members.get(new))
        for name in sorted(names, key=len, reverse=True):
            pattern = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)", re.IGNORECASE)
            title = pattern.sub(_replacer(replacement), title)
    return title


def _replacer(replacement: str) -> Callable[[re.Match[str]], str]:
    return lambda found: _in_case_of(found.group(0), replacement)


def _in_case_of(found: str, replacement: str) -> str:
    if not replacement or replacement[1:2].isupper():  # an acronym keeps its case
        return replacement
    first = replacement[0].upper() if found[:1].isupper() else replacement[0].lower()
    return first + replacement[1:]


# --- per kind ----------------------------------------------------------------------------------------------


def tile_settings(
    kind: str,
    spec: dict[str, Any],
    *,
    query: dict[str, Any],
    switches: Mapping[str, str],
    members: Mapping[str, dict[str, Any]],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A tile's ``spec`` and ``columns`` for its composed ``query`` (switches already applied to the query;
    ``spec`` is the report's, which still names the members before the switches)."""

    def switched(names: Any) -> list[str]:
        return [switches.get(n, n) for n in names if isinstance(n, str)] if isinstance(names, list) else []

    if kind == "table":
        chosen = switched(spec.get("columns")) or output_members(query)
        return {}, _columns(chosen, query=query, members=members)
    if kind == "kpi":
        measure = switched([spec.get("measure")]) or [m for m in query.get("measures") or [] if isinstance(m, str)][:1]
        columns = _columns(measure, query=query, members=members)
        return {"measure": columns[0] if columns else None}, columns
    if kind == "pivot":
        return _pivot_settings(spec, query=query, switched=switched, members=members)
    columns = _columns(output_members(query), query=query, members=members)
    if kind == "vega":
        return render_spec(spec, query=query, switches=switches, members=members), columns
    return {}, columns  # a kind this page does not draw: its rows can still be exported


def _pivot_settings(
    spec: dict[str, Any], *, query: dict[str, Any], switched: Any, members: Mapping[str, dict[str, Any]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A pivot table: its row and column headers (dimensions), its values (measures), and the queries of its totals.

    A switch may make two places name one member: it is kept where it comes first (rows, then columns, then
    values). Totals are queried, not added up, so they are right for any measure and any join: the row totals group
    by the rows only, the column totals by the columns only, the grand total by nothing."""
    rows = list(dict.fromkeys(switched(spec.get("rows"))))
    cols = [m for m in dict.fromkeys(switched(spec.get("columns"))) if m not in rows]
    values = [m for m in dict.fromkeys(switched(spec.get("values"))) if m not in rows and m not in cols]
    settings: dict[str, Any] = {
        "rows": _columns(rows, query=query, members=members),
        "columns": _columns(cols, query=query, members=members),
        "values": _columns(values, query=query, members=members),
    }
    totals = {}
    if rows and cols:
        totals["rows"] = _grouped_by(query, rows)
        totals["columns"] = _grouped_by(query, cols)
    if rows or cols:
        totals["grand"] = _grouped_by(query, [])
    settings["totals"] = totals
    return settings, [*settings["rows"], *settings["columns"], *settings["values"]]


def _grouped_by(query: dict[str, Any], kept: list[str]) -> dict[str, Any]:
    """``query`` grouped by the ``kept`` dimensions only: the others' grouping is dropped (a time dimension keeps its
    date range), the order names only what is left, and every row is counted (no limit, no offset)."""
    out = copy.deepcopy(query)
    out["dimensions"] = [m for m in query.get("dimensions") or [] if m in kept]
    times = []
    for td in out.get("timeDimensions") or []:
        if not isinstance(td, dict) or td.get("dimension") in kept:
            times.append(td)
        elif td.get("dateRange") is not None:
            times.append({key: value for key, value in td.items() if key != "granularity"})
    out["timeDimensions"] = times
    left = {*kept, *(m for m in query.get("measures") or [] if isinstance(m, str))}
    order = out.get("order")
    if isinstance(order, dict):
        out["order"] = {key: value for key, value in order.items() if key in left}
    elif isinstance(order, list):
        out["order"] = [pair for pair in order if isinstance(pair, list) and pair and pair[0] in left]
    for key in ("limit", "offset", "total"):
        out.pop(key, None)
    return {key: value for key, value in out.items() if value not in ([], {})}


# --- Vega-Lite ---------------------------------------------------------------------------------------------


def vega_field(name: str) -> str:
    """A member name as a Vega field: ``.``, ``[`` and ``]`` are path syntax there, so they are escaped."""
    return name.replace("\\", "\\\\").replace(".", "\\.").replace("[", "\\[").replace("]", "\\]")


def render_spec(
    spec: dict[str, Any],
    *,
    query: dict[str, Any],
    switches: Mapping[str, str],
    members: Mapping[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A report's Vega-Lite spec ready to draw a tile's rows: member fields switched and escaped as result keys, the
    rows as the named data set ``table``, sized by its container, with titles, formats, tooltips and time ticks
    (module docstring) wherever the report's spec does not set its own."""
    keys = result_keys(query)
    fields = {vega_field(key): tile_column(name, query=query, members=members or {}) for name, key in keys.items()}

    def member_field(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        name = switches.get(value, value)
        return vega_field(keys[name]) if name in keys else value

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            out = {}
            for key, value in node.items():
                if key == "field":
                    out[key] = member_field(value)
                elif key in ("groupby", "fields", "fold") and isinstance(value, list):
                    out[key] = [member_field(v) for v in value]
                elif key in ("data", "datasets", "$schema"):
                    continue
                else:
                    out[key] = walk(value)
            return out
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    rendered = walk(spec if isinstance(spec, dict) else {})
    single = not any(key in rendered for key in _COMPOSED)
    dates: set[str] = set()
    _dress(rendered, fields, ticks=single, dates=dates)
    config = rendered.get("config") if isinstance(rendered.get("config"), dict) else {}
    data: dict[str, Any] = {"name": "table"}
    if dates:
        # Vega-Lite reads a temporal field's text as a date by itself, but not one given a custom format: said here.
        data["format"] = {"parse": {field: "date" for field in sorted(dates)}}
    return {
        "$schema": VEGA_LITE_SCHEMA,
        **rendered,
        "data": data,
        "width": "container",
        "autosize": {"type": "fit", "contains": "padding"},
        "config": {**config, "customFormatTypes": True},
    }


def _dress(node: Any, fields: Mapping[str, dict[str, Any]], *, ticks: bool, dates: set[str]) -> None:
    """Titles, formats, tooltips and time ticks on every view of a spec (a layer's too), in place; ``dates``
    collects the temporal fields given a time format."""
    if isinstance(node, list):
        for item in node:
            _dress(item, fields, ticks=ticks, dates=dates)
        return
    if not isinstance(node, dict):
        return
    encoding = node.get("encoding")
    if isinstance(encoding, dict):
        faceted = any(channel in encoding for channel in _FACET_CHANNELS)
        for channel, definition in encoding.items():
            for item in definition if isinstance(definition, list) else [definition]:
                if isinstance(item, dict) and item.get("field") in fields:
                    _dress_channel(channel, item, fields[item["field"]], ticks=ticks and not faceted)
                    if item.get("formatType") == CHART_FORMAT and item.get("type") == "temporal":
                        dates.add(item["field"])
    if "mark" in node:
        node["mark"] = _with_tooltip(node["mark"], encoding if isinstance(encoding, dict) else {})
    for key in ("layer", "spec", *_COMPOSED[2:]):
        _dress(node.get(key), fields, ticks=ticks, dates=dates)


def _dress_channel(channel: str, item: dict[str, Any], column: dict[str, Any], *, ticks: bool) -> None:
    item.setdefault("title", column["title"])
    if column["type"] not in ("number", "time") or "format" in item or "formatType" in item:
        return
    value_format = {key: column[key] for key in ("type", "format", "currency", "granularity") if key in column}
    item["format"] = value_format
    item["formatType"] = CHART_FORMAT
    if channel not in ("x", "y") or item.get("axis", {}) is None:
        return
    axis = dict(item.get("axis") or {})
    if "format" not in axis and "formatType" not in axis:
        abbreviated = column["type"] == "number" and item.get("type") == "quantitative"
        axis["format"] = {**value_format, "abbreviate": True} if abbreviated else value_format
        axis["formatType"] = CHART_FORMAT
    grain = column.get("granularity")
    if ticks and item.get("type") == "temporal" and grain in _GRAIN_TICKS and not {"tickCount", "values"} & set(axis):
        axis["tickCount"] = {"expr": _tick_count(channel, str(grain))}
        if item.get("timeUnit") and "labelExpr" not in axis:
            # Periods drawn as bands (a bar per quarter) end where the next begins: the axis's last tick is the end
            # of the last period, not a period of the data, so it has no label.
            axis["labelExpr"] = f"datum.value < domain('{channel}')[1] ? datum.label : ''"
    item["axis"] = axis


def _tick_count(channel: str, grain: str) -> str:
    """A Vega expression for a time axis's ticks: one per ``step`` intervals of the grain, the smallest step whose
    labels fit the axis's length, so every label starts a period of the grain (Q1, not February, on a quarter axis)."""
    interval, days, room, steps = _GRAIN_TICKS[grain]
    size = "width" if channel == "x" else "height"
    ratio = (
        f"((domain('{channel}')[1] - domain('{channel}')[0]) / {round(days * 86_400_000)}"
        f" / max(1, floor({size} / {room})))"
    )
    step = str(steps[-1])
    for candidate in reversed(steps[:-1]):
        step = f"{ratio} <= {candidate} ? {candidate} : {step}"
    return f"{{interval: '{interval}', step: {step}}}"


def _with_tooltip(mark: Any, encoding: dict[str, Any]) -> Any:
    """A mark with the tooltip of its encoding (titles and formats as above) unless it sets its own. A line or an
    area is one item for all its rows, so the tooltip goes on invisible points at its rows instead: it names the row
    under the pointer, never the series' first row."""
    if "tooltip" in encoding:
        return mark
    shaped = {"type": mark} if isinstance(mark, str) else dict(mark) if isinstance(mark, dict) else None
    if shaped is None or "tooltip" in shaped:
        return mark
    if shaped.get("type") in ("line", "area"):
        if shaped.get("point") in (None, False):
            shaped["point"] = {"opacity": 0, "size": 120, "tooltip": True}
        elif isinstance(shaped["point"], dict):
            shaped["point"] = {**shaped["point"], "tooltip": True}
        else:
            shaped["tooltip"] = True  # visible points ("point": true) take the mark's tooltip
    else:
        shaped["tooltip"] = True
    return shaped
