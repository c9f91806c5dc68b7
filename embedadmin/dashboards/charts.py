"""Chart types -> a report's ``meta.visualization`` (``docs/dashboards.md``, "Reports"), written once, here.

The panel's report builder offers the chart types of :data:`CHART_TYPES` and asks the panel for the visualization of
the one picked (:func:`chart_visualization`); it has no rule of its own. A chart's spec names the query's members
only (``sales.total_amount``, a grouped time dimension by its member name): the tile's composition
(``viewstate.render_spec``) turns them into result keys, and axis titles and formats are added when a tile is drawn,
so a spec here carries marks and encodings and nothing else. What comes out passes ``validation.visualization_parse``
for the same query.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from embedadmin.core.errors import BadRequest


@dataclass(frozen=True)
class ChartType:
    """A chart type the builder offers: its name (what the builder sends) and its label (what a person reads)."""

    name: str
    label: str


CHART_TYPES: tuple[ChartType, ...] = (
    ChartType("kpi", "KPI (one number)"),
    ChartType("line", "Line"),
    ChartType("area", "Area"),
    ChartType("bar", "Bar (vertical)"),
    ChartType("bar_horizontal", "Bar (horizontal)"),
    ChartType("bar_stacked", "Stacked bar (vertical)"),
    ChartType("bar_horizontal_stacked", "Stacked bar (horizontal)"),
    ChartType("pie", "Pie"),
    ChartType("donut", "Donut"),
    ChartType("table", "Table"),
    ChartType("pivot", "Pivot table"),
)
CHART_TYPE_NAMES = tuple(chart.name for chart in CHART_TYPES)
VEGA_CHART_TYPES = ("line", "area", "bar", "bar_horizontal", "bar_stacked", "bar_horizontal_stacked", "pie", "donut")

# Vega-Lite's time unit for a bar per period (a bar on a continuous time scale has no width of its own).
_BAR_TIME_UNITS = {
    "year": "year",
    "quarter": "yearquarter",
    "month": "yearmonth",
    "week": "yearweek",
    "day": "yearmonthdate",
    "hour": "yearmonthdatehours",
}


@dataclass(frozen=True)
class QueryShape:
    """What a chart needs to know of a Cube query: its measures, its dimensions, and its time dimensions grouped by a
    granularity (member name, granularity), each in the query's order; and whether the query sets an order."""

    measures: tuple[str, ...]
    dimensions: tuple[str, ...]
    times: tuple[tuple[str, str], ...]
    ordered: bool

    @property
    def categories(self) -> tuple[str, ...]:
        """The members rows are grouped by: grouped time dimensions first, then dimensions."""
        return (*(name for name, _ in self.times), *self.dimensions)


def query_shape(query: Mapping[str, Any]) -> QueryShape:
    """The shape of a Cube query (an object; members that are not strings are left out, validation names them)."""

    def names(key: str) -> tuple[str, ...]:
        value = query.get(key)
        return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()

    times = []
    for item in query.get("timeDimensions") or []:
        if not isinstance(item, dict):
            continue
        dimension, grain = item.get("dimension"), item.get("granularity")
        if isinstance(dimension, str) and isinstance(grain, str):
            times.append((dimension, grain))
    order = query.get("order")
    return QueryShape(
        measures=names("measures"), dimensions=names("dimensions"), times=tuple(times), ordered=bool(order)
    )


@dataclass(frozen=True)
class ChartSpec:
    """A chart type's visualization for a query, and notes for the person building it (what is not drawn)."""

    visualization: dict[str, Any]
    notes: tuple[str, ...] = field(default_factory=tuple)


def chart_visualization(
    *, query: Mapping[str, Any], chart_type: str, title_of: Callable[[str], str] = str
) -> ChartSpec:
    """The ``meta.visualization`` of ``chart_type`` for ``query``; 400 when the type is unknown or cannot draw the
    query (a KPI without a measure, a line without anything to put along its axis). ``title_of`` names a member in
    the notes."""
    if chart_type not in CHART_TYPE_NAMES:
        raise BadRequest(f"chartType: must be one of {', '.join(CHART_TYPE_NAMES)}")
    shape = query_shape(query)
    label = next(chart.label for chart in CHART_TYPES if chart.name == chart_type)
    if chart_type == "table":
        columns = [*shape.categories, *shape.measures]
        if not columns:
            raise BadRequest("chartType: a table needs a measure or a dimension")
        return ChartSpec({"kind": "table", "columns": columns})
    if not shape.measures:
        raise BadRequest(f"chartType: a {label} chart needs a measure")
    notes = []
    if chart_type == "kpi":
        if shape.categories:
            notes.append(f"A KPI shows one number: {title_of(shape.measures[0])} of the first row.")
        elif len(shape.measures) > 1:
            notes.append(f"A KPI shows one number: {title_of(shape.measures[0])}.")
        return ChartSpec({"kind": "kpi", "measure": shape.measures[0]}, tuple(notes))
    if chart_type == "pivot":
        categories = list(shape.categories)
        return ChartSpec(
            {"kind": "pivot", "rows": categories[:1], "columns": categories[1:], "values": list(shape.measures)}
        )
    if not shape.categories:
        raise BadRequest(f"chartType: a {label} chart needs a time dimension with a granularity or a dimension")
    if len(shape.measures) > 1:
        notes.append(
            f"This chart draws {title_of(shape.measures[0])}; the other measures are not drawn "
            "(a table or a pivot table shows them all)."
        )
    spec = _vega_spec(chart_type, shape)
    series = None if chart_type in ("pie", "donut") else _series(shape)
    drawn = {shape.categories[0], *([series] if series else [])}
    left = [name for name in shape.categories if name not in drawn]
    if left and series is None and chart_type in ("pie", "donut"):
        notes.append(
            f"A pie has a slice per row, and the rows are split by {', '.join(title_of(name) for name in left)} too: "
            f"keep one dimension for one slice per {title_of(shape.categories[0])}."
        )
    elif left:
        notes.append(f"Not drawn: {', '.join(title_of(name) for name in left)} (a table shows every dimension).")
    if chart_type in ("bar_stacked", "bar_horizontal_stacked") and series is None:
        notes.append("Nothing to stack by: add a second dimension (or a time dimension and a dimension).")
    return ChartSpec({"kind": "vega", "spec": spec}, tuple(notes))


def _series(shape: QueryShape) -> str | None:
    """The member that splits a chart into coloured series: the dimension beside the one along the axis."""
    categories = shape.categories
    return categories[1] if len(categories) > 1 else None


def _vega_spec(chart_type: str, shape: QueryShape) -> dict[str, Any]:
    measure = shape.measures[0]
    category = shape.categories[0]
    grain = dict(shape.times).get(category)
    series = _series(shape)
    value = {"field": measure, "type": "quantitative"}
    if chart_type in ("pie", "donut"):
        mark: dict[str, Any] = {"type": "arc"}
        if chart_type == "donut":
            mark["innerRadius"] = {"expr": "min(width, height) / 4"}
        encoding: dict[str, Any] = {
            "theta": {**value, "stack": True},
            "color": {"field": category, "type": "ordinal" if grain else "nominal"},
        }
        return {"mark": mark, "encoding": encoding}
    horizontal = chart_type in ("bar_horizontal", "bar_horizontal_stacked")
    along, across = ("y", "x") if horizontal else ("x", "y")
    axis: dict[str, Any] = {"field": category}
    if grain is None:
        axis["type"] = "nominal"
        # The rows' order when the query sets one, else the biggest first.
        axis["sort"] = None if shape.ordered or chart_type in ("line", "area") else f"-{across}"
    elif chart_type in ("line", "area"):
        axis["type"] = "temporal"
    elif grain in _BAR_TIME_UNITS:
        axis.update(type="temporal", timeUnit=_BAR_TIME_UNITS[grain])
    else:  # a custom granularity: one bar per period, in time order
        axis["type"] = "ordinal"
    encoding = {along: axis, across: dict(value)}
    if series is not None:
        encoding["color"] = {"field": series, "type": "nominal"}
        if chart_type in ("bar", "bar_horizontal"):
            encoding[f"{along}Offset"] = {"field": series, "type": "nominal"}
    if chart_type == "line":
        mark = {"type": "line", "point": grain is None}  # points mark the categories of a line across them
    elif chart_type == "area":
        mark = {"type": "area", "line": True, "fillOpacity": 0.3}
    else:
        mark = {"type": "bar"}
        if chart_type in ("bar_stacked", "bar_horizontal_stacked"):
            encoding[across]["stack"] = "zero"
    return {"mark": mark, "encoding": encoding}


@dataclass(frozen=True)
class ChartGuess:
    """The chart type a stored visualization is, and whether the builder would write exactly it for its query (else
    it was written by hand, and is kept as it is until the chart type is changed)."""

    chart_type: str
    exact: bool


def chart_type_of(*, visualization: Mapping[str, Any], query: Mapping[str, Any]) -> ChartGuess:
    """Which chart type a report's visualization is (for the builder, opening a saved report)."""
    kind = visualization.get("kind")
    if kind in ("kpi", "table", "pivot"):
        chart_type = str(kind)
    elif kind == "vega":
        for candidate in VEGA_CHART_TYPES:
            try:
                made = chart_visualization(query=query, chart_type=candidate).visualization
            except BadRequest:
                break  # the query draws no chart: no candidate will match
            if made == dict(visualization):
                return ChartGuess(candidate, exact=True)
        chart_type = _guess_from_spec(visualization.get("spec"))
    else:  # a text report: the builder shows it as a table of its query
        return ChartGuess("table", exact=False)
    try:
        made = chart_visualization(query=query, chart_type=chart_type).visualization
    except BadRequest:
        return ChartGuess(chart_type, exact=False)
    return ChartGuess(chart_type, exact=made == dict(visualization))


def _guess_from_spec(spec: Any) -> str:
    spec = spec if isinstance(spec, dict) else {}
    mark = spec.get("mark")
    mark_type = mark.get("type") if isinstance(mark, dict) else mark
    encoding = spec.get("encoding")
    encoding = encoding if isinstance(encoding, dict) else {}
    if mark_type in ("line", "area"):
        return str(mark_type)
    if mark_type == "arc":
        return "donut" if isinstance(mark, dict) and mark.get("innerRadius") else "pie"
    if mark_type == "bar":
        x = encoding.get("x")
        horizontal = isinstance(x, dict) and x.get("type") == "quantitative"
        grouped = "xOffset" in encoding or "yOffset" in encoding
        stacked = "color" in encoding and not grouped
        return ("bar_horizontal" if horizontal else "bar") + ("_stacked" if stacked else "")
    return "bar"


__all__ = [
    "CHART_TYPES",
    "CHART_TYPE_NAMES",
    "ChartGuess",
    "ChartSpec",
    "ChartType",
    "QueryShape",
    "chart_type_of",
    "chart_visualization",
    "query_shape",
]
