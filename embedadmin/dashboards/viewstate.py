"""A dashboard's view state: the page URL's grammar, the controls' state, and the tile queries and specs they give.

The one place where controls, URL parameters and member switches become queries (docs/dashboards.md "A view",
reference 1.4). The grammar, with its exact literal rules:

- ``f_<member>=<JSON {"value"|"values", "operator"?}>`` applies only when a FILTER control names that member,
  with an operator that control offers (omitted: ``equals``, or ``inDateRange`` for a date range control);
- ``tg_<member>=<grain>`` only when a TIME_GRAIN control on that member lists the grain (exactly, lowercase);
- ``ms_<member>=<member>`` only when a FIELD control on that member lists the second member as an alternative;
- ``allowExport`` and ``show...`` only narrow: the literal ``false`` turns one off, anything else leaves it to
  the session (``showDashboardHeader=false`` hides the rest of the header too). What a viewer may do is the
  session's signed settings; the URL can take away, never add (``embedding.pages.effective_flags``);
- ``locale`` and ``timezone`` override the session's when usable, else fall through.

Anything else is ignored. Controls only ever *add* filters to a tile's query (an AND beside the report's own);
the query then runs through the Core Data API with the viewer's token, so access policies still apply: a URL
shapes the view and never widens what the viewer may see.

A control applies to a tile when the tile's query names a member of the control member's cube or view (the
part before the dot), so a filter never forces a join the report did not ask for.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from embedadmin.accounts.models import Deployment
from embedadmin.accounts.services import locale_check, timezone_check
from embedadmin.core.errors import BadRequest
from embedadmin.dashboards import tiles
from embedadmin.dashboards.models import ReportSnapshot
from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.modeling.model import DATE_OPERATORS, VALUELESS_OPERATORS
from embedadmin.semantic.modeling.reading_titles import READING_TITLE
from embedadmin.semantic.query.dates import date_range_presets
from embedadmin.semantic.serving.services import semantic_meta

DATE_RANGE = "inDateRange"
SHOW_FLAGS = ("showDashboardHeader", "showDashboardTitle", "showDashboardExportMenu")
URL_FLAGS = ("allowExport", *SHOW_FLAGS)  # the flags a page URL may turn off (parse_url)
VALUES_QUERY_LIMIT = 500
MAX_FILTER_VALUES = 1000


# --- controls ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Control:
    """A FILTER, TIME_GRAIN or FIELD widget of a dashboard config."""

    id: str
    type: str
    member: str
    config: dict[str, Any]
    position: dict[str, Any]

    @property
    def operators(self) -> list[str]:
        operators = self.config.get("operators")
        if isinstance(operators, list) and operators:
            return [op for op in operators if isinstance(op, str)]
        return ["equals"]

    @property
    def is_date_range(self) -> bool:
        return any(op in DATE_OPERATORS for op in self.operators)

    @property
    def default_operator(self) -> str:
        return DATE_RANGE if self.is_date_range and DATE_RANGE in self.operators else self.operators[0]

    @property
    def grains(self) -> list[str]:
        grains = self.config.get("grains")
        return [g for g in grains if isinstance(g, str)] if isinstance(grains, list) else []

    @property
    def alternatives(self) -> list[str]:
        members = self.config.get("alternatives")
        return [m for m in members if isinstance(m, str)] if isinstance(members, list) else []


def as_object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (configs are validated on write; reads stay safe)."""
    return value if isinstance(value, dict) else {}


def controls_of(config: dict[str, Any]) -> list[Control]:
    """The controls of a dashboard config, in its order."""
    controls = []
    for widget in _widgets(config):
        kind = widget.get("type")
        widget_config = as_object(widget.get("config"))
        member = widget_config.get("member")
        if kind in ("FILTER", "TIME_GRAIN", "FIELD") and isinstance(member, str) and isinstance(widget.get("id"), str):
            position = as_object(widget.get("position"))
            controls.append(Control(id=widget["id"], type=kind, member=member, config=widget_config, position=position))
    return controls


def _widgets(config: dict[str, Any]) -> list[dict[str, Any]]:
    widgets = config.get("widgets")
    return [w for w in widgets if isinstance(w, dict)] if isinstance(widgets, list) else []


# --- state -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FilterValue:
    operator: str
    values: list[Any]

    def as_dict(self) -> dict[str, Any]:
        return {"operator": self.operator, "values": list(self.values)}


@dataclass
class ViewState:
    """What the viewer chose: filter values, grains and member switches by control id, and the time zone."""

    filters: dict[str, FilterValue] = field(default_factory=dict)
    grains: dict[str, str] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)
    timezone: str = "UTC"

    def as_dict(self) -> dict[str, Any]:
        return {
            "filters": {cid: value.as_dict() for cid, value in self.filters.items()},
            "grains": dict(self.grains),
            "fields": dict(self.fields),
            "timezone": self.timezone,
        }


def usable_timezone(value: Any) -> str | None:
    """``value`` when it is an IANA time zone name, else None (the check of a session's time zone, whose zone list is
    read once per process: ``available_timezones`` walks the tz database on every call)."""
    try:
        return timezone_check(value)
    except BadRequest:
        return None


def usable_locale(value: Any) -> str | None:
    try:
        return locale_check(value)
    except BadRequest:
        return None


def _filter_value(control: Control, raw: Any) -> FilterValue | None:
    """A control's filter from ``{"value"|"values", "operator"?}`` (f_ JSON or a defaultValue), or None if unusable."""
    if not isinstance(raw, dict):
        raw = {"values": raw} if isinstance(raw, list) else {"value": raw}
    operator = raw.get("operator", control.default_operator)
    if not isinstance(operator, str) or operator not in control.operators:
        return None
    if operator in VALUELESS_OPERATORS:
        return FilterValue(operator, [])
    if "values" in raw:
        values = raw["values"]
    elif "value" in raw:
        values = [raw["value"]]
    else:
        return None
    if not isinstance(values, list) or not values or len(values) > MAX_FILTER_VALUES:
        return None
    if not all(isinstance(v, str) or (isinstance(v, int | float) and not isinstance(v, bool)) for v in values):
        return None
    values = [v if isinstance(v, str) else str(v) for v in values]
    if control.is_date_range and not (len(values) in (1, 2) and all(v.strip() for v in values)):
        return None  # a relative range ("last 12 months") or [from, to]
    if not control.is_date_range and control.config.get("multiple") is False and len(values) > 1:
        return None
    return FilterValue(operator, values)


def default_state(config: dict[str, Any], *, timezone: str) -> ViewState:
    """The state a dashboard opens with: the controls' default values and grains."""
    return _default_state(controls_of(config), timezone=timezone)


def _default_state(controls: list[Control], *, timezone: str) -> ViewState:
    state = ViewState(timezone=timezone)
    for control in controls:
        if control.type == "FILTER" and control.config.get("defaultValue") is not None:
            value = _filter_value(control, control.config["defaultValue"])
            if value is not None:
                state.filters[control.id] = value
        elif control.type == "TIME_GRAIN" and control.config.get("defaultGrain") in control.grains:
            state.grains[control.id] = control.config["defaultGrain"]
    return state


@dataclass
class UrlView:
    """What a page URL says: the state its parameters set over the defaults, its flags, locale and time zone.

    ``flags`` are what the URL lets through: each true unless the URL turns it off (it cannot turn one on).
    """

    state: ViewState
    flags: dict[str, bool]
    locale: str | None = None
    timezone: str | None = None


def _first(params: Iterable[tuple[str, str]]) -> dict[str, str]:
    seen: dict[str, str] = {}
    for name, value in params:
        seen.setdefault(name, value)  # the first occurrence, as URLSearchParams.get reads it
    return seen


# An f_ value longer than this is not a filter a control takes (a few hundred values at most): ignored unread.
MAX_FILTER_PARAMETER = 8192


def apply_filter_parameter(config: dict[str, Any], state: ViewState, name: str, value: str) -> bool:
    """Apply one ``f_<member>=<JSON>`` to ``state``; False when no FILTER control takes it (then nothing changes)."""
    return _apply_filter_parameter(controls_of(config), state, name, value)


def _apply_filter_parameter(controls: list[Control], state: ViewState, name: str, value: str) -> bool:
    member = name[2:]
    if len(value) > MAX_FILTER_PARAMETER:
        return False  # unusable, like any other: ignored
    try:
        raw = json.loads(value)
    except (ValueError, RecursionError):
        try:
            raw = json.loads(unquote(value))
        except (ValueError, RecursionError):
            return False
    applied = False
    for control in controls:
        if control.type == "FILTER" and control.member == member:
            parsed = _filter_value(control, raw)
            if parsed is not None:
                state.filters[control.id] = parsed
                applied = True
    return applied


def parse_url(config: dict[str, Any], params: Iterable[tuple[str, str]], *, timezone: str) -> UrlView:
    """Read a page URL's parameters (name, value pairs, decoded) against a dashboard config."""
    given = _first(params)
    url_timezone = usable_timezone(given.get("timezone"))
    controls = controls_of(config)
    state = _default_state(controls, timezone=url_timezone or timezone)
    for name, value in given.items():
        if name.startswith("f_"):
            _apply_filter_parameter(controls, state, name, value)
        elif name.startswith("tg_"):
            for control in controls:
                if control.type == "TIME_GRAIN" and control.member == name[3:] and value in control.grains:
                    state.grains[control.id] = value
        elif name.startswith("ms_"):
            for control in controls:
                if control.type == "FIELD" and control.member == name[3:] and value in control.alternatives:
                    state.fields[control.id] = value
    header = given.get("showDashboardHeader") != "false"
    flags = {
        "allowExport": given.get("allowExport") != "false",
        "showDashboardHeader": header,
        "showDashboardTitle": header and given.get("showDashboardTitle") != "false",
        "showDashboardExportMenu": header and given.get("showDashboardExportMenu") != "false",
    }
    return UrlView(state=state, flags=flags, locale=usable_locale(given.get("locale")), timezone=url_timezone)


def state_from_body(config: dict[str, Any], body: Any, *, timezone: str) -> ViewState:
    """The state a view request sends (``{"filters", "grains", "fields", "timezone"?}`` by control id); 400 when
    it names an unknown control or a value the control does not take. Omitted parts take the defaults."""
    if body is None:
        return default_state(config, timezone=timezone)
    if not isinstance(body, dict):
        raise BadRequest("state: must be an object")
    unknown = sorted(set(body) - {"filters", "grains", "fields", "timezone"})
    if unknown:
        raise BadRequest(f"state: unknown keys: {', '.join(unknown)}")
    zone = body.get("timezone", timezone)
    if usable_timezone(zone) is None:
        raise BadRequest("state.timezone: must be an IANA time zone name")
    all_controls = controls_of(config)
    state = _default_state(all_controls, timezone=zone)
    controls = {control.id: control for control in all_controls}
    for part, kind in (("filters", "FILTER"), ("grains", "TIME_GRAIN"), ("fields", "FIELD")):
        given = body.get(part, None)
        if given is None:
            continue
        if not isinstance(given, dict):
            raise BadRequest(f"state.{part}: must be an object keyed by control id")
        if part == "filters":
            state.filters = {}  # the body says the whole filter state: a control left out is cleared
        for control_id, value in given.items():
            control = controls.get(control_id)
            if control is None or control.type != kind:
                raise BadRequest(f"state.{part}: no {kind} control {control_id!r} in this dashboard")
            if part == "filters":
                if value is None:
                    continue
                parsed = _filter_value(control, value)
                if parsed is None:
                    raise BadRequest(f"state.filters.{control_id}: not a value this control takes")
                state.filters[control_id] = parsed
            elif part == "grains":
                if value not in control.grains:
                    raise BadRequest(f"state.grains.{control_id}: must be one of {', '.join(control.grains)}")
                state.grains[control_id] = value
            else:
                if value != control.member and value not in control.alternatives:
                    raise BadRequest(f"state.fields.{control_id}: must be one of {', '.join(control.alternatives)}")
                state.fields[control_id] = value
    return state


def filter_url_parameters(config: dict[str, Any], state: ViewState) -> list[str]:
    """The inverse of the grammar: the ``f_...`` parameters that give ``state``'s filters (decoded, unescaped)."""
    return _filter_url_parameters(controls_of(config), state)


def _filter_url_parameters(controls: list[Control], state: ViewState) -> list[str]:
    parameters = []
    for control in controls:
        value = state.filters.get(control.id)
        if control.type != "FILTER" or value is None:
            continue
        body: dict[str, Any] = {"values": value.values} if value.values else {}
        if value.operator != control.default_operator:
            body["operator"] = value.operator
        parameters.append(f"f_{control.member}={json.dumps(body, separators=(',', ':'), ensure_ascii=False)}")
    return parameters


# --- composition -------------------------------------------------------------------------------------------


def _cube_of(member: str) -> str:
    return member.split(".", 1)[0]


def _filter_items(filters: Any) -> Iterator[dict[str, Any]]:
    """Every filter object of a query's ``filters``, at any depth of ``and``/``or``."""
    for item in filters if isinstance(filters, list) else []:
        if isinstance(item, dict):
            yield item
            yield from _filter_items(item.get("and"))
            yield from _filter_items(item.get("or"))


# The keys a Cube filter object names its member with: ``member``, or the older ``dimension`` (the semantic layer
# takes either, one of them; embedadmin.semantic.query.normalize._filter).
_FILTER_MEMBER_KEYS = ("member", "dimension")


def _filter_member(item: dict[str, Any]) -> str | None:
    """The member a filter object names, under ``member`` or ``dimension``; None for an ``and``/``or`` group."""
    for key in _FILTER_MEMBER_KEYS:
        name = item.get(key)
        if isinstance(name, str):
            return name
    return None


def query_members(query: dict[str, Any]) -> list[str]:
    """Every member a Cube query names (measures, dimensions, segments, time dimensions, filters), once each."""
    names: list[str] = []
    for part in ("measures", "dimensions", "segments"):
        names += [m for m in query.get(part) or [] if isinstance(m, str)]
    names += [td["dimension"] for td in tiles.time_dimensions(query)]
    names += [name for item in _filter_items(query.get("filters")) if (name := _filter_member(item)) is not None]
    return list(dict.fromkeys(names))


def _rename_in_query(query: dict[str, Any], old: str, new: str) -> None:
    """``old`` named ``new`` wherever ``query`` names it; a list that named both names ``new`` once (a switch to a
    member the query already has does not ask for it twice)."""
    for part in ("measures", "dimensions", "segments"):
        if isinstance(query.get(part), list):
            renamed = [new if m == old else m for m in query[part]]
            query[part] = [m for i, m in enumerate(renamed) if not isinstance(m, str) or renamed.index(m) == i]
    for td in tiles.time_dimensions(query):
        if td["dimension"] == old:
            td["dimension"] = new
    order = query.get("order")
    if isinstance(order, dict):
        query["order"] = {new if key == old else key: value for key, value in order.items()}
    elif isinstance(order, list):
        query["order"] = [
            [new, *pair[1:]] if isinstance(pair, list) and pair and pair[0] == old else pair for pair in order
        ]
    for item in _filter_items(query.get("filters")):
        for key in _FILTER_MEMBER_KEYS:  # the key the report wrote is kept
            if item.get(key) == old:
                item[key] = new


def _field_switches(controls: list[Control], state: ViewState) -> dict[str, str]:
    """Member -> member that the FIELD controls' state replaces."""
    switches = {}
    for control in controls:
        chosen = state.fields.get(control.id)
        if control.type == "FIELD" and chosen and chosen != control.member:
            switches[control.member] = chosen
    return switches


def _control_filters(controls: list[Control], state: ViewState) -> list[dict[str, Any]]:
    """The Cube filters the FILTER controls give for ``state``: what every tile on their cube or view is narrowed by,
    and what the dashboard's chat is told (the view's ``contextFilters``)."""
    return [
        {"member": control.member, "operator": value.operator, "values": list(value.values)}
        for control in controls
        if control.type == "FILTER" and (value := state.filters.get(control.id)) is not None
    ]


def compose_query(config: dict[str, Any], query: dict[str, Any], state: ViewState) -> dict[str, Any]:
    """A tile's query for ``state``: the report's query, FIELD switches applied, the FILTER controls' values added
    as AND filters, the TIME_GRAIN controls' grains set on their time dimensions, and the viewer's time zone."""
    controls = controls_of(config)
    return _compose_query(controls, query, state, _field_switches(controls, state), _control_filters(controls, state))


def _compose_query(
    controls: list[Control],
    query: dict[str, Any],
    state: ViewState,
    switches: Mapping[str, str],
    filters: list[dict[str, Any]],
) -> dict[str, Any]:
    """:func:`compose_query` with what is the same for every tile of a view read once: the controls, the FIELD
    switches and the FILTER controls' filters."""
    composed = copy.deepcopy(query)
    for old, new in switches.items():
        _rename_in_query(composed, old, new)
    cubes = {_cube_of(member) for member in query_members(composed)}
    added = copy.deepcopy([f for f in filters if _cube_of(f["member"]) in cubes])  # each tile its own
    for control in controls:
        if _cube_of(control.member) not in cubes:
            continue
        if control.type == "TIME_GRAIN" and control.id in state.grains:
            for td in tiles.time_dimensions(composed):
                # Only a time dimension already grouped by a grain: a KPI's date range stays one number.
                if td["dimension"] == control.member and td.get("granularity"):
                    td["granularity"] = state.grains[control.id]
    if added:
        existing = composed.get("filters")
        composed["filters"] = [*(existing if isinstance(existing, list) else []), *added]
    composed["timezone"] = state.timezone
    return composed


def viewer_members(*, deployment: Deployment, ctx: QueryContext) -> dict[str, dict[str, Any]]:
    """Every member the viewer may see, by name, as ``/v1/meta`` composed for display describes it to them (title,
    the title a person reads it by, type, format)."""
    body = semantic_meta(deployment=deployment, ctx=ctx, readable=True)
    members: dict[str, dict[str, Any]] = {}
    for cube in body.get("cubes", []):
        for part in ("measures", "dimensions", "segments"):
            for member in cube.get(part, []):
                if isinstance(member, dict) and isinstance(member.get("name"), str):
                    members[member["name"]] = member
    return members


def _member_item(described: dict[str, Any]) -> dict[str, Any]:
    keys = ("title", "shortTitle", READING_TITLE, "type", "format", "currency")
    return {key: described[key] for key in keys if key in described}


def _widget_title(widget_config: dict[str, Any], snapshot: ReportSnapshot | None) -> str:
    title = widget_config.get("title")
    if isinstance(title, str) and title:
        return title
    return (snapshot.title or snapshot.name) if snapshot else ""


def compose_view(
    *,
    config: dict[str, Any],
    snapshot_for: Any,
    state: ViewState,
    members: Mapping[str, dict[str, Any]],
) -> dict[str, Any]:
    """The view of a published config for ``state``: controls, and each widget with its query and what is drawn of
    it (``dashboards.tiles``: title, columns, kind-specific spec, member descriptions).
    ``snapshot_for(widget_config)`` gives a CHART's report snapshot; ``members`` is :func:`viewer_members`."""
    controls = controls_of(config)
    switches = _field_switches(controls, state)
    filters = _control_filters(controls, state)
    widgets = []
    for widget in _widgets(config):
        kind = widget.get("type")
        widget_config = as_object(widget.get("config"))
        base = {"id": widget.get("id"), "type": kind, "position": widget.get("position")}
        if kind == "TEXT":
            widgets.append({**base, "text": widget_config.get("text", "")})
        elif kind == "CHART":
            snapshot = snapshot_for(widget_config)
            if snapshot is None:
                widgets.append({**base, "title": _widget_title(widget_config, None), "error": "Report not found"})
                continue
            item: dict[str, Any] = {**base, "title": _widget_title(widget_config, snapshot), "kind": snapshot.kind}
            if snapshot.kind == ReportSnapshot.Kind.TEXT:
                item["text"] = snapshot.spec.get("text", "") if isinstance(snapshot.spec, dict) else ""
            else:
                report_query = snapshot.json_query if isinstance(snapshot.json_query, dict) else {}
                query = _compose_query(controls, report_query, state, switches, filters)
                spec = snapshot.spec if isinstance(snapshot.spec, dict) else {}
                item["title"] = tiles.switched_title(
                    item["title"], report_members=query_members(report_query), switches=switches, members=members
                )
                item["query"] = query
                item["spec"], item["columns"] = tiles.tile_settings(
                    snapshot.kind, spec, query=query, switches=switches, members=members
                )
                item["members"] = {m: _member_item(members[m]) for m in query_members(query) if m in members}
            widgets.append(item)
    return {
        "state": state.as_dict(),
        "filterUrlParameters": _filter_url_parameters(controls, state),
        "contextFilters": filters,
        "controls": [_control_item(control, members) for control in controls],
        "widgets": widgets,
    }


def _control_item(control: Control, members: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    described = members.get(control.member, {})
    label = control.config.get("label") or tiles.member_title(control.member, described)
    item: dict[str, Any] = {
        "id": control.id,
        "type": control.type,
        "member": control.member,
        "label": label,
        "position": control.position,
    }
    if control.type == "FILTER":
        item.update(
            operators=control.operators,
            dateRange=control.is_date_range,
            multiple=control.config.get("multiple", True) is not False,
            visibility=control.config.get("visibility", "visible"),
            defaultValue=control.config.get("defaultValue"),
        )
        if control.is_date_range:
            item["presets"] = date_range_presets()  # the ranges a person picks from: ones the Core Data API reads
        else:
            item["valuesQuery"] = {
                "dimensions": [control.member],
                "order": {control.member: "asc"},
                "limit": VALUES_QUERY_LIMIT,
            }
    elif control.type == "TIME_GRAIN":
        item.update(
            grains=[{"name": grain, "title": tiles.grain_title(grain, described)} for grain in control.grains],
            defaultGrain=control.config.get("defaultGrain"),
        )
    else:
        item["alternatives"] = [
            {"member": m, "title": tiles.member_title(m, members.get(m))} for m in control.alternatives
        ]
    return item
