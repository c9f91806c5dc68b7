"""Compiling a cube's measures, dimensions and segments from YAML definitions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from embedadmin.semantic.modeling.definitions import (
    DESCRIPTIVE_KEYS,
    Abort,
    Definition,
    Problems,
    definition_name,
    short_title,
    snake_key,
    visibility,
)
from embedadmin.semantic.modeling.formats import is_known_format
from embedadmin.semantic.modeling.intervals import parse_interval
from embedadmin.semantic.modeling.model import (
    DIMENSION_TYPES,
    MEASURE_TYPES,
    CaseSpec,
    CaseWhen,
    Dimension,
    Granularity,
    Measure,
    MemberDisplay,
    RollingWindow,
    Segment,
    SqlSnippet,
)
from embedadmin.semantic.modeling.references import PREDEFINED_GRANULARITIES, SnippetError, SnippetScope, parse_snippet
from embedadmin.semantic.modeling.stages import (
    STAGE_KEYS,
    UNSUPPORTED_MULTI_STAGE_TYPES,
    compile_calendar_time_shifts,
    compile_multi_stage,
)

_COMMON = DESCRIPTIVE_KEYS | {"sql"}
MEASURE_KEYS = _COMMON | {"type", "filters", "format", "currency", "drill_members", "rolling_window", "cumulative"}
MEASURE_KEYS |= {"multi_stage", *STAGE_KEYS}
MEASURE_UNSUPPORTED = frozenset({"grain", "order_by", "case", "mask", "filter"})
DIMENSION_KEYS = _COMMON | {
    "type",
    "primary_key",
    "sub_query",
    "propagate_filters_to_sub_query",
    "case",
    "format",
    "currency",
    "order",
    "links",
    "granularities",
    "latitude",
    "longitude",
    "key",
    "suggest_filter_values",
    "time_shift",
}
DIMENSION_UNSUPPORTED = frozenset({"mask", "multi_stage", "add_group_by"})
SEGMENT_KEYS = _COMMON
GRANULARITY_KEYS = frozenset({"name", "title", "interval", "offset", "origin"})
_ROLLING_KEYS = frozenset({"trailing", "leading", "offset", "type", "granularity"})
_ROLLING_TYPES = ("year_to_date", "quarter_to_date", "month_to_date", "to_date")


@dataclass
class CubeScope:
    """What compiling one cube's members needs."""

    cube: str
    cube_title: str
    scope: SnippetScope
    dialect: str
    problems: Problems
    # Whether bare columns get the cube's alias: not in a view's own members, which have no table of their own.
    qualify: bool = True

    def snippet(self, definition: Definition, key: str, text: object, *, qualify: bool = True) -> SqlSnippet:
        try:
            return parse_snippet(
                text, self.scope, definition.location_of(key), self.dialect, qualify=qualify and self.qualify
            )
        except SnippetError as exc:
            raise definition.fail(str(exc), key) from None

    def display(self, definition: Definition, name: str, *, default_public: bool) -> MemberDisplay:
        own_title = definition.string("title")
        own_public = visibility(definition, None)
        shown = short_title(name, own_title)
        return MemberDisplay(
            title=f"{self.cube_title} {shown}",
            short_title=shown,
            description=definition.string("description"),
            meta=definition.get("meta"),
            public=default_public if own_public is None else own_public,
            own_title=own_title,
            own_public=own_public,
        )

    def member_path(self, definition: Definition, key: str, reference: object, kinds: tuple[str, ...]) -> str:
        """Resolve ``name`` / ``cube.name`` / ``{CUBE}.name`` to a full member name of one of ``kinds``."""
        text = str(reference).replace("{CUBE}", self.cube).replace("{", "").replace("}", "").strip()
        cube, _, member = text.rpartition(".")
        cube = cube or self.cube
        found = self.scope.members.get(cube, {}).get(member)
        if found not in kinds:
            raise definition.fail(f'unknown {" or ".join(kinds)} "{reference}"', key)
        return f"{cube}.{member}"


def measure_type(definition: Definition) -> str:
    raw = definition.string("type", required=True)
    kind = snake_key(raw)
    if kind in UNSUPPORTED_MULTI_STAGE_TYPES:
        raise definition.fail(f'type "{raw}" (a multi-stage form) is not supported by this server', "type")
    if kind == "running_total":
        raise definition.fail('type "running_total" is not supported; use rolling_window: {trailing: unbounded}')
    if kind not in MEASURE_TYPES:
        raise definition.fail(f'unknown type "{raw}"', "type")
    return kind


def compile_measure(definition: Definition, cs: CubeScope) -> Measure:
    name = definition_name(definition, "measure", cs.cube)
    definition.check_keys(MEASURE_KEYS, MEASURE_UNSUPPORTED)
    kind = measure_type(definition)
    sql = None
    if definition.get("sql") is not None:
        sql = cs.snippet(definition, "sql", definition.get("sql"))
    elif kind != "count":
        raise definition.fail(f'"sql" is required for type "{kind}"')
    filters = []
    for index, raw in enumerate(definition.sequence("filters")):
        item = definition.child(raw, definition.what, "filters")
        if item.get("sql") is None:
            raise definition.fail(f"filters[{index}] needs sql", "filters")
        filters.append(cs.snippet(item, "sql", item.get("sql")))
    drill = tuple(
        cs.member_path(definition, "drill_members", ref, ("dimension", "measure"))
        for ref in definition.sequence("drill_members")
    )
    multi_stage = compile_multi_stage(definition, cs, kind, sql)
    return Measure(
        name=name,
        entity=cs.cube,
        type=kind,
        sql=sql,
        display=cs.display(definition, name, default_public=True),
        filters=tuple(filters),
        drill_members=drill,
        format=_format(definition),
        currency=_currency(definition),
        rolling_window=_rolling_window(definition),
        location=definition.location,
        multi_stage=multi_stage,
    )


def compile_dimension(definition: Definition, cs: CubeScope) -> Dimension:
    name = definition_name(definition, "dimension", cs.cube)
    definition.check_keys(DIMENSION_KEYS, DIMENSION_UNSUPPORTED)
    raw_type = definition.string("type", required=True)
    if raw_type not in DIMENSION_TYPES:
        raise definition.fail(f'unknown type "{raw_type}"', "type")
    primary_key = bool(definition.boolean("primary_key", False))
    case = _case(definition, cs) if definition.get("case") is not None else None
    latitude = longitude = sql = None
    if raw_type == "geo":
        latitude = _geo_part(definition, cs, "latitude")
        longitude = _geo_part(definition, cs, "longitude")
    elif definition.get("sql") is not None:
        sql = cs.snippet(definition, "sql", definition.get("sql"))
    elif case is None:
        raise definition.fail('"sql" is required')
    granularities = _granularities(definition, raw_type)
    order = definition.string("order")
    if order is not None and order not in ("asc", "desc"):
        raise definition.fail(f'order must be "asc" or "desc", got "{order}"', "order")
    key = definition.get("key")
    return Dimension(
        name=name,
        entity=cs.cube,
        type=raw_type,
        sql=sql,
        display=cs.display(definition, name, default_public=not primary_key),
        primary_key=primary_key,
        case=case,
        latitude=latitude,
        longitude=longitude,
        granularities=granularities,
        format=_format(definition),
        currency=_currency(definition),
        order=order,
        key=cs.member_path(definition, "key", key, ("dimension",)) if key is not None else None,
        sub_query=bool(definition.boolean("sub_query", False)),
        propagate_filters_to_sub_query=bool(definition.boolean("propagate_filters_to_sub_query", False)),
        suggest_filter_values=bool(definition.boolean("suggest_filter_values", True)),
        location=definition.location,
        time_shifts=compile_calendar_time_shifts(definition, cs, raw_type),
    )


def compile_segment(definition: Definition, cs: CubeScope) -> Segment:
    name = definition_name(definition, "segment", cs.cube)
    definition.check_keys(SEGMENT_KEYS)
    sql = definition.get("sql")
    if sql is None:
        raise definition.fail('"sql" is required')
    return Segment(
        name=name,
        entity=cs.cube,
        # An empty sql is a segment that keeps every row: Cube drops the empty condition from the WHERE clause.
        sql=None if sql == "" else cs.snippet(definition, "sql", sql),
        display=cs.display(definition, name, default_public=True),
        location=definition.location,
    )


def _format(definition: Definition) -> object:
    value = definition.get("format")
    if value is not None and not is_known_format(value):
        raise definition.fail(f"invalid format {value!r}", "format")
    return value


def _currency(definition: Definition) -> str | None:
    value = definition.string("currency")
    if value is None:
        return None
    if len(value) != 3 or not value.isalpha():
        raise definition.fail(f'currency must be an ISO 4217 code, got "{value}"', "currency")
    return value.upper()


def _rolling_window(definition: Definition) -> RollingWindow | None:
    raw = definition.get("rolling_window")
    if raw is None:
        return None
    window = definition.child(raw, definition.what, "rolling_window")
    window.check_keys(_ROLLING_KEYS)
    kind = window.string("type")
    if kind is not None and kind not in _ROLLING_TYPES:
        raise window.fail(f"rolling_window type must be one of {', '.join(_ROLLING_TYPES)}", "type")
    for key in ("trailing", "leading"):
        value = window.string(key)
        if value is not None and value != "unbounded":
            try:
                parse_interval(value)
            except ValueError as exc:
                raise window.fail(f"rolling_window {key}: {exc}", key) from None
    offset = window.string("offset") or "end"
    if offset not in ("start", "end"):
        raise window.fail('rolling_window offset must be "start" or "end"', "offset")
    granularity = window.string("granularity")
    if kind == "to_date" and granularity not in PREDEFINED_GRANULARITIES:
        raise window.fail("rolling_window type to_date needs a granularity", "granularity")
    return RollingWindow(
        trailing=window.string("trailing"),
        leading=window.string("leading"),
        offset=offset,
        type=kind,
        granularity=granularity,
    )


def _case(definition: Definition, cs: CubeScope) -> CaseSpec:
    raw = definition.child(definition.get("case"), definition.what, "case")
    raw.check_keys(frozenset({"when", "else"}))
    whens = []
    for item_raw in raw.sequence("when"):
        item = raw.child(item_raw, definition.what, "when")
        item.check_keys(frozenset({"sql", "label"}))
        if item.get("sql") is None or item.get("label") is None:
            raise item.fail("each case.when needs sql and label")
        whens.append(CaseWhen(sql=cs.snippet(item, "sql", item.get("sql")), label=_label(item, cs)))
    if not whens:
        raise raw.fail("case needs at least one when")
    else_label = None
    if raw.get("else") is not None:
        else_def = raw.child(raw.get("else"), definition.what, "else")
        else_label = _label(else_def, cs) if else_def.get("label") is not None else None
    return CaseSpec(when=tuple(whens), else_label=else_label)


def _label(item: Definition, cs: CubeScope) -> str | SqlSnippet:
    label = item.get("label")
    if isinstance(label, dict):
        return cs.snippet(item.child(label, item.what, "label"), "sql", label.get("sql"))
    if isinstance(label, bool) or not isinstance(label, str | int | float):
        raise item.fail("label must be a string or {sql: ...}", "label")
    return str(label)


def _geo_part(definition: Definition, cs: CubeScope, key: str) -> SqlSnippet:
    raw = definition.get(key)
    if raw is None:
        raise definition.fail(f'geo dimensions need "{key}: {{sql: ...}}"')
    part = definition.child(raw, definition.what, key)
    return cs.snippet(part, "sql", part.get("sql"))


def _granularities(definition: Definition, dimension_type: str) -> dict[str, Granularity]:
    items = definition.sequence("granularities")
    if items and dimension_type != "time":
        raise definition.fail("granularities are only allowed on time dimensions", "granularities")
    result: dict[str, Granularity] = {}
    for raw in items:
        item = definition.child(raw, definition.what, "granularities")
        name = item.string("name", required=True)
        assert name is not None
        item.what = f"{definition.what} granularity {name}"
        item.check_keys(GRANULARITY_KEYS)
        if name in result:
            raise item.fail(f'duplicate granularity "{name}"')
        offset_text = item.string("offset")
        try:
            interval = parse_interval(item.string("interval", required=True) or "")
        except ValueError as exc:
            raise item.fail(str(exc), "interval") from None
        try:
            offset = parse_interval(offset_text) if offset_text else None
        except ValueError as exc:
            raise item.fail(str(exc), "offset") from None
        if interval.months <= 0 and interval.seconds <= 0:
            raise item.fail("interval must be positive", "interval")
        if interval.months and interval.seconds:
            raise item.fail("intervals mixing months/years with smaller units are not supported", "interval")
        origin = item.string("origin")
        if origin is not None and offset is not None:
            raise item.fail("use either offset or origin, not both")
        if origin is not None:
            try:
                datetime.fromisoformat(origin)
            except ValueError:
                raise item.fail(f'origin must be an ISO date or date-time, got "{origin}"', "origin") from None
        result[name] = Granularity(
            name=name,
            title=item.string("title"),
            interval=interval,
            offset=offset,
            origin=origin,
            offset_text=offset_text,
        )
    return result


__all__ = ["Abort", "CubeScope", "compile_dimension", "compile_measure", "compile_segment"]
