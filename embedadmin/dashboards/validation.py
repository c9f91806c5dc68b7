"""Validation of what is written to a deployment's workspace: a report's query and visualization, and a dashboard
draft (``docs/dashboards.md``, "Dashboard config" and "Reports").

Members are looked up in the deployment's compiled model as an administrator sees it (hidden members included).
Every failure is a :class:`BadRequest` whose message names the field (``jsonQuery``, ``meta.visualization.spec``)
or the widget (``widgets[2] (id "revenue")``) and the problem.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from embedadmin.accounts.models import Deployment
from embedadmin.core.errors import ApiError, BadRequest
from embedadmin.core.fields import loads_json
from embedadmin.semantic.modeling.model import OPERATORS_BY_TYPE, CompiledModel, Dimension, Member, value_type
from embedadmin.semantic.modeling.references import PREDEFINED_GRANULARITIES
from embedadmin.semantic.query.normalize import QUERY_KEYS
from embedadmin.semantic.serving.services import served_model

VISUALIZATION_KINDS = ("vega", "table", "kpi", "pivot", "text")
# The settings of each kind of visualization besides ``kind``.
VISUALIZATION_SETTINGS: dict[str, tuple[str, ...]] = {
    "vega": ("spec",),
    "table": ("columns",),
    "kpi": ("measure",),
    "pivot": ("rows", "columns", "values"),
    "text": ("text",),
}
WIDGET_TYPES = ("CHART", "TEXT", "FILTER", "TIME_GRAIN", "FIELD")
WIDGET_KEYS = frozenset({"id", "type", "position", "config", "title", "style"})
CONFIG_KEYS = frozenset({"title", "description", "kind", "layout", "widgets", "theme", "settings"})
VISIBILITIES = ("visible", "hidden", "disabled")
MAX_WIDGET_ID = 128
DEFAULT_COLS = 12
# A value naming a place to load from: ``https://…``, ``//host/…``, ``data:…``.
_URL = re.compile(r"^\s*([a-z][a-z0-9+.-]*:|//)", re.IGNORECASE)


def model_of(*, deployment: Deployment) -> CompiledModel:
    """The model ``deployment`` serves its administrators (compiled without a compile key: drafts are checked
    against it, not against a tenant's); 400 when it has none or none compiles."""
    if not deployment.model_dir:
        raise BadRequest(f"Deployment {deployment.pk} has no data model: set one with configure_deployment")
    try:
        return served_model(deployment=deployment, ctx=None).model
    except ApiError as exc:
        raise BadRequest(f"Deployment {deployment.pk}'s data model cannot be read: {exc.message}") from None


# --- reports -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParsedQuery:
    """A report's query: as stored (``text``), parsed (``query``), and the members it selects."""

    text: str
    query: dict[str, Any]
    measures: tuple[str, ...] = ()
    selected: frozenset[str] = field(default_factory=frozenset)  # measures, dimensions, time dimensions (+grain)


def _member(model: CompiledModel, name: Any, kinds: tuple[str, ...], where: str) -> Member:
    if not isinstance(name, str):
        raise BadRequest(f"{where}: a member name must be a string")
    member = model.members.get(name)
    if member is None:
        raise BadRequest(f"{where}: member {name!r} does not exist in the data model")
    if member.kind not in kinds:
        raise BadRequest(f"{where}: {name!r} is a {member.kind}, not a {' or '.join(kinds)}")
    return member


def _list(query: dict[str, Any], key: str) -> list[Any]:
    value = query.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadRequest(f"jsonQuery.{key}: must be a list")
    return value


def _time_dimension_name(model: CompiledModel, name: Any, where: str) -> tuple[str, str | None]:
    """``sales.created_at`` or ``sales.created_at.month``: the dimension (a time one) and the granularity."""
    if isinstance(name, str) and name.count(".") == 2:
        base, _, grain = name.rpartition(".")
        member = _member(model, base, ("dimension",), where)
        _check_grain(member, grain, where)
        return base, grain
    _member(model, name, ("dimension",), where)
    return str(name), None


def _check_grain(member: Member, grain: Any, where: str) -> None:
    if not isinstance(member, Dimension) or member.type != "time":
        raise BadRequest(f"{where}: {member.full_name!r} is not a time dimension")
    if not isinstance(grain, str) or (grain not in PREDEFINED_GRANULARITIES and grain not in member.granularities):
        raise BadRequest(f"{where}: {grain!r} is not a granularity of {member.full_name!r}")


def _filters(model: CompiledModel, filters: Any, where: str) -> None:
    if not isinstance(filters, list):
        raise BadRequest(f"{where}: must be a list")
    for index, item in enumerate(filters):
        path = f"{where}[{index}]"
        if not isinstance(item, dict):
            raise BadRequest(f"{path}: must be an object")
        logical = [k for k in ("and", "or") if k in item]
        if logical:
            _filters(model, item[logical[0]], f"{path}.{logical[0]}")
            continue
        name = item.get("member", item.get("dimension"))
        _member(model, name, ("dimension", "measure"), f"{path}.member")
        operator = item.get("operator")
        if not isinstance(operator, str):
            raise BadRequest(f"{path}.operator: must be a string")


def _order_names(order: Any) -> list[Any]:
    if order is None:
        return []
    if isinstance(order, dict):
        return list(order)
    if isinstance(order, list):
        names = []
        for item in order:
            if not isinstance(item, list) or not item:
                raise BadRequest("jsonQuery.order: each item must be [member, direction]")
            names.append(item[0])
        return names
    raise BadRequest("jsonQuery.order: must be an object or a list")


def query_parse(*, model: CompiledModel, json_query: Any) -> ParsedQuery | None:
    """Parse and check a report's ``jsonQuery`` (a JSON string, or an object): an object of Cube REST query keys
    whose every member (measures, dimensions, timeDimensions, filters including nested and/or, segments, order)
    exists in ``model``. None for an empty query (``""`` or null: a report without one)."""
    if json_query is None or json_query == "":
        return None
    if isinstance(json_query, str):
        try:
            query = loads_json(json_query)
        except (ValueError, RecursionError):
            raise BadRequest("jsonQuery: not valid JSON") from None
        text = json_query
    else:
        query = json_query
        text = ""
    if not isinstance(query, dict):
        raise BadRequest("jsonQuery: must be a JSON object (a Cube query)")
    unknown = sorted(set(query) - QUERY_KEYS)
    if unknown:
        raise BadRequest(f"jsonQuery: unknown keys: {', '.join(unknown)}")
    measures = tuple(str(m) for m in _list(query, "measures"))
    for index, name in enumerate(_list(query, "measures")):
        _member(model, name, ("measure",), f"jsonQuery.measures[{index}]")
    selected: set[str] = set(measures)
    for index, name in enumerate(_list(query, "dimensions")):
        base, grain = _time_dimension_name(model, name, f"jsonQuery.dimensions[{index}]")
        selected.add(base)
        if grain:
            selected.add(f"{base}.{grain}")
    for index, name in enumerate(_list(query, "segments")):
        _member(model, name, ("segment",), f"jsonQuery.segments[{index}]")
    for index, item in enumerate(_list(query, "timeDimensions")):
        path = f"jsonQuery.timeDimensions[{index}]"
        if not isinstance(item, dict):
            raise BadRequest(f"{path}: must be an object")
        member = _member(model, item.get("dimension"), ("dimension",), f"{path}.dimension")
        grain = item.get("granularity")
        if grain is not None:
            _check_grain(member, grain, f"{path}.granularity")
            selected.add(f"{member.full_name}.{grain}")
        elif not isinstance(member, Dimension) or member.type != "time":
            raise BadRequest(f"{path}.dimension: {member.full_name!r} is not a time dimension")
        selected.add(member.full_name)
    if query.get("filters") is not None:
        _filters(model, query["filters"], "jsonQuery.filters")
    for name in _order_names(query.get("order")):
        if isinstance(name, str) and name.count(".") == 2:
            _time_dimension_name(model, name, "jsonQuery.order")
        else:
            _member(model, name, ("measure", "dimension"), "jsonQuery.order")
    if not text:
        text = canonical_json(query)
    return ParsedQuery(text=text, query=query, measures=measures, selected=frozenset(selected))


def canonical_json(value: Any) -> str:
    """The JSON text a parsed value is stored as (compact, keys in the given order)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Visualization:
    """How an embed draws a report: ``kind`` and its settings (``spec``: the Vega-Lite spec, or the table / KPI /
    text settings)."""

    kind: str
    spec: dict[str, Any]


def _walk(value: Any, path: str, visit: Callable[[str, Any, Any], None]) -> None:
    """Call ``visit(path, key, value)`` for every member of every object in ``value``, at any depth."""
    if isinstance(value, dict):
        for key, item in value.items():
            visit(f"{path}.{key}", key, item)
            _walk(item, f"{path}.{key}", visit)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _walk(item, f"{path}[{index}]", visit)


def _vega_spec(spec: Any, parsed: ParsedQuery | None) -> dict[str, Any]:
    where = "meta.visualization.spec"
    if not isinstance(spec, dict):
        raise BadRequest(f"{where}: must be a Vega-Lite spec (an object)")
    selected = parsed.selected if parsed is not None else frozenset()

    def visit(path: str, key: Any, item: Any) -> None:
        if key in ("data", "datasets"):
            raise BadRequest(f"{path}: a spec must not carry {key!r}: the data comes from the report's query")
        if key == "url" or (isinstance(item, str) and _URL.match(item) and key not in ("format", "timeUnit")):
            raise BadRequest(f"{path}: a spec must not name URLs")
        if key == "encoding" and isinstance(item, dict):
            for channel, definition in item.items():
                for one in definition if isinstance(definition, list) else [definition]:
                    name = one.get("field") if isinstance(one, dict) else None
                    if isinstance(name, str) and name not in selected:
                        raise BadRequest(f"{path}.{channel}.field: {name!r} is not a member of the report's query")

    visit(where, None, spec)
    _walk(spec, where, visit)
    return spec


def visualization_parse(*, meta: dict[str, Any], parsed: ParsedQuery | None) -> Visualization:
    """Check ``meta.visualization`` against the report's query (``docs/dashboards.md``, "Reports"). A report
    without one is drawn as a table of its query."""
    given = meta.get("visualization")
    if given is None:
        return Visualization(kind="table", spec={})
    where = "meta.visualization"
    if not isinstance(given, dict):
        raise BadRequest(f"{where}: must be an object")
    kind = given.get("kind")
    if kind not in VISUALIZATION_KINDS:
        raise BadRequest(f"{where}.kind: must be one of {', '.join(VISUALIZATION_KINDS)}")
    unknown = sorted(set(given) - {"kind", *VISUALIZATION_SETTINGS[kind]})
    if unknown:
        raise BadRequest(f"{where}: unknown keys for kind {kind}: {', '.join(unknown)}")
    selected = parsed.selected if parsed is not None else frozenset()
    if kind == "vega":
        return Visualization(kind=kind, spec=_vega_spec(given.get("spec"), parsed))
    if kind == "table":
        columns = given.get("columns")
        if columns is None:
            return Visualization(kind=kind, spec={})
        if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
            raise BadRequest(f"{where}.columns: must be a list of member names")
        for column in columns:
            if column not in selected:
                raise BadRequest(f"{where}.columns: {column!r} is not a member of the report's query")
        return Visualization(kind=kind, spec={"columns": columns})
    if kind == "kpi":
        measure = given.get("measure")
        if not isinstance(measure, str) or parsed is None or measure not in parsed.measures:
            raise BadRequest(f"{where}.measure: {measure!r} is not a measure of the report's query")
        return Visualization(kind=kind, spec={"measure": measure})
    if kind == "pivot":
        return Visualization(kind=kind, spec=_pivot(given, parsed))
    text = given.get("text", "")
    if not isinstance(text, str):
        raise BadRequest(f"{where}.text: must be a string")
    return Visualization(kind=kind, spec={"text": text})


def _pivot(given: dict[str, Any], parsed: ParsedQuery | None) -> dict[str, Any]:
    """A pivot table's settings: ``rows`` and ``columns`` are dimensions or time dimensions of the query (a member
    in one of them only), ``values`` one or more of its measures."""
    where = "meta.visualization"
    measures = set(parsed.measures) if parsed is not None else set()
    selected = parsed.selected if parsed is not None else frozenset()
    out: dict[str, list[str]] = {}
    for key in ("rows", "columns", "values"):
        names = given.get(key, [])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise BadRequest(f"{where}.{key}: must be a list of member names")
        for name in names:
            if name not in selected:
                raise BadRequest(f"{where}.{key}: {name!r} is not a member of the report's query")
            if key == "values" and name not in measures:
                raise BadRequest(f"{where}.values: {name!r} is not a measure of the report's query")
            if key != "values" and name in measures:
                raise BadRequest(f"{where}.{key}: {name!r} is a measure; rows and columns are dimensions")
        if len(set(names)) != len(names):
            raise BadRequest(f"{where}.{key}: names a member twice")
        out[key] = list(names)
    if not out["values"]:
        raise BadRequest(f"{where}.values: a pivot table needs at least one measure")
    both = sorted(set(out["rows"]) & set(out["columns"]))
    if both:
        raise BadRequest(f"{where}: {', '.join(both)} is in both rows and columns")
    return out


# --- dashboard drafts --------------------------------------------------------------------------------


@dataclass
class DraftContext:
    """What checking a draft needs from the deployment: its model (read once, only when a control needs it) and its
    reports (by id and by publicId)."""

    deployment: Deployment
    report_exists: Callable[[int], bool]
    report_id_of_public_id: Callable[[str], int | None]
    _model: CompiledModel | None = None

    @property
    def model(self) -> CompiledModel:
        if self._model is None:
            self._model = model_of(deployment=self.deployment)
        return self._model


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _position(position: Any, cols: int, where: str) -> None:
    if not isinstance(position, dict):
        raise BadRequest(f"{where}: position must be an object {{x, y, w, h}}")
    for key in ("x", "y", "w", "h"):
        if not _integer(position.get(key)):
            raise BadRequest(f"{where}: position.{key} must be an integer")
    unknown = sorted(set(position) - {"x", "y", "w", "h"})
    if unknown:
        raise BadRequest(f"{where}: unknown keys in position: {', '.join(unknown)}")
    if position["x"] < 0 or position["y"] < 0:
        raise BadRequest(f"{where}: position.x and position.y must be >= 0")
    if position["w"] < 1 or position["h"] < 1:
        raise BadRequest(f"{where}: position.w and position.h must be >= 1")
    if position["x"] + position["w"] > cols:
        raise BadRequest(f"{where}: position.x + position.w must be <= layout.cols ({cols})")


def _control_member(ctx: DraftContext, name: Any, where: str, what: str = "config.member") -> Member:
    if not isinstance(name, str) or not name:
        raise BadRequest(f"{where}: {what} must be a member name")
    member = ctx.model.members.get(name)
    if member is None:
        raise BadRequest(f"{where}: {what} {name!r} does not exist in the data model")
    return member


def _chart(ctx: DraftContext, config: dict[str, Any], where: str) -> dict[str, Any]:
    has_id, has_public = "reportId" in config, "reportPublicId" in config
    if has_id == has_public:
        raise BadRequest(f"{where}: config must name its report by reportId or by reportPublicId (one of them)")
    if has_public:
        public_id = config["reportPublicId"]
        report_id = ctx.report_id_of_public_id(public_id) if isinstance(public_id, str) else None
        if report_id is None:
            raise BadRequest(f"{where}: report {public_id!r} does not exist in this deployment")
        config = {k: v for k, v in config.items() if k != "reportPublicId"}
        return {**config, "reportId": report_id}
    report_id = config["reportId"]
    if not _integer(report_id):
        raise BadRequest(f"{where}: config.reportId must be an integer")
    if not ctx.report_exists(report_id):
        raise BadRequest(f"{where}: report {report_id} does not exist in this deployment")
    return config


def _filter(ctx: DraftContext, config: dict[str, Any], where: str) -> None:
    member = _control_member(ctx, config.get("member"), where)
    if member.kind == "segment":
        raise BadRequest(
            f"{where}: config.member {member.full_name!r} is a segment; a filter needs a dimension or measure"
        )
    kind = value_type(member)
    allowed = control_operators(member)
    operators = config.get("operators")
    if operators is not None:
        if not isinstance(operators, list) or not operators or not all(isinstance(o, str) for o in operators):
            raise BadRequest(f"{where}: config.operators must be a non-empty list of operator names")
        for operator in operators:
            if operator not in allowed:
                raise BadRequest(
                    f"{where}: operator {operator!r} is not valid for {member.full_name!r} ({kind}); "
                    f"use {', '.join(allowed)}"
                )
    if "label" in config and not isinstance(config["label"], str):
        raise BadRequest(f"{where}: config.label must be a string")
    if "multiple" in config and not isinstance(config["multiple"], bool):
        raise BadRequest(f"{where}: config.multiple must be a boolean")
    _visibility(config, where)


def control_operators(member: Member) -> tuple[str, ...]:
    """The operators a FILTER control on ``member`` may offer: those of its value type
    (``semantic.modeling.model.OPERATORS_BY_TYPE``), except that a control on a time member is a date range."""
    kind = value_type(member)
    if kind == "time":
        return ("inDateRange",)
    return OPERATORS_BY_TYPE.get(kind, OPERATORS_BY_TYPE["string"])


def _visibility(config: dict[str, Any], where: str) -> None:
    if config.get("visibility", "visible") not in VISIBILITIES:
        raise BadRequest(f"{where}: config.visibility must be one of {', '.join(VISIBILITIES)}")


def _time_grain(ctx: DraftContext, config: dict[str, Any], where: str) -> None:
    member = _control_member(ctx, config.get("member"), where)
    if not isinstance(member, Dimension) or member.type != "time":
        raise BadRequest(f"{where}: config.member {member.full_name!r} is not a time dimension")
    grains = config.get("grains")
    if not isinstance(grains, list) or not grains or not all(isinstance(g, str) for g in grains):
        raise BadRequest(f"{where}: config.grains must be a non-empty list of granularities")
    for grain in grains:
        _check_grain(member, grain, where)
    default = config.get("defaultGrain")
    if default is not None and default not in grains:
        raise BadRequest(f"{where}: config.defaultGrain {default!r} is not one of config.grains")
    _visibility(config, where)


def _field(ctx: DraftContext, config: dict[str, Any], where: str) -> None:
    member = _control_member(ctx, config.get("member"), where)
    if member.kind == "segment":
        raise BadRequest(f"{where}: config.member {member.full_name!r} is a segment")
    alternatives = config.get("alternatives")
    if alternatives is not None:
        if not isinstance(alternatives, list) or not alternatives:
            raise BadRequest(f"{where}: config.alternatives must be a non-empty list of member names")
        for name in alternatives:
            other = _control_member(ctx, name, where, "config.alternatives member")
            if other.kind != member.kind:
                raise BadRequest(
                    f"{where}: alternative {other.full_name!r} is a {other.kind}, "
                    f"and {member.full_name!r} is a {member.kind}"
                )


def _text(config: dict[str, Any], where: str) -> None:
    if "text" in config and not isinstance(config["text"], str):
        raise BadRequest(f"{where}: config.text must be a string")


def draft_validate(ctx: DraftContext, draft: Any) -> dict[str, Any]:
    """Check a dashboard draft (Cube's ``DashboardConfig``) and return it as stored: each widget without an id gets
    one, ``reportPublicId`` becomes ``reportId``. A failure names the widget and the problem."""
    if not isinstance(draft, dict):
        raise BadRequest("dashboardDraft: must be an object")
    unknown = sorted(set(draft) - CONFIG_KEYS)
    if unknown:
        raise BadRequest(f"dashboardDraft: unknown keys: {', '.join(unknown)}")
    for key in ("title", "description"):
        if key in draft and not isinstance(draft[key], str):
            raise BadRequest(f"dashboardDraft.{key}: must be a string")
    for key in ("theme", "settings"):
        if key in draft and not isinstance(draft[key], dict):
            raise BadRequest(f"dashboardDraft.{key}: must be an object")
    layout = draft.get("layout", {})
    if not isinstance(layout, dict):
        raise BadRequest("dashboardDraft.layout: must be an object")
    cols = layout.get("cols", DEFAULT_COLS)
    if not _integer(cols) or cols < 1:
        raise BadRequest("dashboardDraft.layout.cols: must be a positive integer")
    if "rowHeight" in layout and (not _integer(layout["rowHeight"]) or layout["rowHeight"] < 1):
        raise BadRequest("dashboardDraft.layout.rowHeight: must be a positive integer")
    widgets = draft.get("widgets", [])
    if not isinstance(widgets, list):
        raise BadRequest("dashboardDraft.widgets: must be a list")
    given_ids = [w.get("id") for w in widgets if isinstance(w, dict) and w.get("id") is not None]
    taken = set(i for i in given_ids if isinstance(i, str))
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for index, widget in enumerate(widgets):
        where = f"widgets[{index}]"
        if not isinstance(widget, dict):
            raise BadRequest(f"{where}: must be an object")
        widget_id = widget.get("id")
        if widget_id is not None:
            if not isinstance(widget_id, str) or not 1 <= len(widget_id) <= MAX_WIDGET_ID:
                raise BadRequest(f"{where}: id must be a string of 1 to {MAX_WIDGET_ID} characters")
            where = f'{where} (id "{widget_id}")'
            if widget_id in seen:
                raise BadRequest(f"{where}: id is used by another widget")
        unknown = sorted(set(widget) - WIDGET_KEYS)
        if unknown:
            raise BadRequest(f"{where}: unknown keys: {', '.join(unknown)}")
        kind = widget.get("type")
        if kind not in WIDGET_TYPES:
            raise BadRequest(f"{where}: type must be one of {', '.join(WIDGET_TYPES)}")
        if widget_id is None:
            widget_id = _fresh_id(kind, taken)
        seen.add(widget_id)
        _position(widget.get("position"), cols, where)
        config = widget.get("config", {})
        if not isinstance(config, dict):
            raise BadRequest(f"{where}: config must be an object")
        if "title" in widget and not isinstance(widget["title"], str):
            raise BadRequest(f"{where}: title must be a string")
        if kind == "CHART":
            config = _chart(ctx, config, where)
        elif kind == "TEXT":
            _text(config, where)
        elif kind == "FILTER":
            _filter(ctx, config, where)
        elif kind == "TIME_GRAIN":
            _time_grain(ctx, config, where)
        else:
            _field(ctx, config, where)
        out.append({**widget, "id": widget_id, "config": config})
    return {**draft, "widgets": out}


def _fresh_id(kind: str, taken: set[str]) -> str:
    number = 1
    while f"{kind.lower()}-{number}" in taken:
        number += 1
    fresh = f"{kind.lower()}-{number}"
    taken.add(fresh)
    return fresh


def chart_report_ids(config: dict[str, Any]) -> list[int]:
    """The report ids the CHART widgets of a (validated) config name, in widget order, without repeats."""
    ids: list[int] = []
    for widget in config.get("widgets", []):
        if widget.get("type") == "CHART":
            report_id = widget.get("config", {}).get("reportId")
            if _integer(report_id) and report_id not in ids:
                ids.append(report_id)
    return ids


__all__ = [
    "DraftContext",
    "ParsedQuery",
    "Visualization",
    "canonical_json",
    "chart_report_ids",
    "control_operators",
    "draft_validate",
    "model_of",
    "query_parse",
    "visualization_parse",
]
