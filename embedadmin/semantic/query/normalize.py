"""Validating and normalizing a Cube JSON query (gateway ``query.js`` ``normalizeQuery``).

Shape errors read like Cube's Joi messages (``Invalid query format: "limit" must be a number``); member
errors name the member. Every member is looked up in the compiled model (unknown names never reach SQL);
members a caller may not see (``public: false``, or denied by an access policy) cannot be selected, and
members denied by a policy cannot be filtered on either (public: false members may be, as in Cube).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from embedadmin.core.fields import MAX_BIGINT
from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.errors import AccessDenied, QueryError, QueryLimitError
from embedadmin.semantic.modeling.model import (
    DATE_OPERATORS,
    FILTER_OPERATORS,
    VALUELESS_OPERATORS,
    CompiledModel,
    Dimension,
    Member,
    value_type,
)
from embedadmin.semantic.modeling.references import PREDEFINED_GRANULARITIES
from embedadmin.semantic.query.access import EntityAccess, entity_access, stringify
from embedadmin.semantic.query.dates import (
    canonical_timezone,
    is_absolute,
    pad_start,
    resolve_date_range,
    resolve_timezone,
)
from embedadmin.semantic.query.normalized import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    FilterCondition,
    FilterGroup,
    FilterNode,
    NormalizedQuery,
    OrderSpec,
    TimeDimensionSpec,
)
from embedadmin.semantic.query.values import TYPED_OPERATORS, check_typed_values

QUERY_KEYS = frozenset(
    {
        "measures",
        "dimensions",
        "filters",
        "timeDimensions",
        "segments",
        "timezone",
        "limit",
        "offset",
        "total",
        "renewQuery",
        "order",
        "ungrouped",
        "responseFormat",
        "joinHints",
        "cache",
        "cacheMode",
    }
)
MEMBER_ID = re.compile(r"^[a-zA-Z0-9_]+\.[a-zA-Z0-9_]+$")
DIMENSION_ID = re.compile(r"^[a-zA-Z0-9_]+\.[a-zA-Z0-9_]+(\.[a-zA-Z0-9_]+)?$")
ORDER_ID = re.compile(r"^[a-zA-Z0-9_]+(\.[a-zA-Z0-9_]+){0,2}$")
RESPONSE_FORMATS = ("default", "compact", "columnar")
CACHE_MODES = ("stale-if-slow", "stale-while-revalidate", "must-revalidate", "no-cache")
HIDDEN_MEMBER = (
    "You requested hidden member: '{name}'. Please make it visible using `shown: true`. Please note primaryKey "
    "fields are `shown: false` by default: https://cube.dev/docs/schema/reference/joins#setting-a-primary-key."
)
NOT_GRANTED = "Access denied: '{name}' is not granted to this viewer"
_EMPTY_QUERY = (
    "Query should contain either measures, dimensions or timeDimensions with granularities in order to be valid"
)


def invalid(message: str) -> QueryError:
    return QueryError(f"Invalid query format: {message}")


MAX_FILTER_VALUES = 10_000
MAX_QUERY_MEMBERS = 1_000


@dataclass(frozen=True)
class Limits:
    """Row limits (Cube's ``CUBEJS_DB_QUERY_DEFAULT_LIMIT`` and ``CUBEJS_DB_QUERY_LIMIT``) and size limits: filter
    values and members in one request (``LIMITS["MAX_FILTER_VALUES"]`` and ``["MAX_QUERY_MEMBERS"]``)."""

    default: int = DEFAULT_LIMIT
    maximum: int = MAX_LIMIT
    filter_values: int = MAX_FILTER_VALUES
    members: int = MAX_QUERY_MEMBERS


def check_query_size(items: list[Any], limits: Limits) -> None:
    """Refuse (400) a request whose queries together name more filter values or members than ``limits`` allow,
    before any of it is normalized: a statement binds each value as a parameter (PostgreSQL takes 65,535 at
    most), and each member costs planning time. Counts what the raw queries hold, whatever their shape."""
    values = members = 0
    for item in items:
        if not isinstance(item, Mapping):
            continue
        for key in ("measures", "dimensions", "segments", "timeDimensions"):
            given = item.get(key)
            if isinstance(given, list | Mapping):
                members += len(given)
        order = item.get("order")
        if isinstance(order, list | Mapping):
            members += len(order)
        pending = [item.get("filters")]
        while pending:
            node = pending.pop()
            if isinstance(node, list):
                pending.extend(node)
            elif isinstance(node, Mapping):
                members += 1
                given = node.get("values")
                if isinstance(given, list):
                    values += len(given)
                for group in ("and", "or"):
                    if isinstance(node.get(group), list):
                        pending.append(node[group])
    if values > limits.filter_values:
        raise invalid(f"a request may hold at most {limits.filter_values} filter values (this one holds {values})")
    if members > limits.members:
        raise invalid(f"a request may name at most {limits.members} members (this one names {members})")


class _Normalizer:
    """One query's normalization: the model, the caller, and per-entity access decided once."""

    def __init__(self, model: CompiledModel, ctx: QueryContext, zone: ZoneInfo, now: datetime | None) -> None:
        self.model = model
        self.ctx = ctx
        self.zone = zone
        self.now = now
        self._access: dict[str, EntityAccess] = {}

    def access(self, entity: str) -> EntityAccess:
        if entity not in self._access:
            self._access[entity] = entity_access(self.model.entities[entity], self.ctx)
        return self._access[entity]

    def granted(self, name: str) -> bool:
        """Whether ``name`` is a member the caller's access policies let them use."""
        entity_name, _, member_name = name.partition(".")
        if entity_name not in self.model.entities or name not in self.model.members:
            return False
        access = self.access(entity_name)
        return not access.denied and access.member_visible(member_name)

    def member(self, name: str, kinds: tuple[str, ...], *, selected: bool) -> Member:
        """Look ``name`` up; check its kind and that the caller may use it. A caller who reads only what was
        granted is refused alike for a name outside the grant and for a name that does not exist (403)."""
        if self.ctx.only_granted and not self.granted(name):
            raise AccessDenied(NOT_GRANTED.format(name=name))
        entity_name, _, member_name = name.partition(".")
        entity = self.model.entities.get(entity_name)
        if entity is None:
            raise QueryError(f"Cube '{entity_name}' not found for path '{name}'")
        member = self.model.members.get(name)
        if member is None:
            raise QueryError(f"'{member_name}' not found for path '{name}'")
        if member.kind not in kinds:
            raise QueryError(f"'{name}' is not a {' or '.join(kinds)}")
        access = self.access(entity_name)
        if access.denied or not access.member_visible(member_name):
            raise QueryError(HIDDEN_MEMBER.format(name=name))
        if selected and not (entity.public and member.display.public):
            raise QueryError(HIDDEN_MEMBER.format(name=name))
        return member


def normalize_query(
    model: CompiledModel,
    query: Any,
    ctx: QueryContext,
    *,
    now: datetime | None = None,
    default_timezone: str = "UTC",
    limits: Limits = Limits(),
) -> NormalizedQuery:
    """Validate one query object and return it normalized; raises QueryError / QueryLimitError."""
    if not isinstance(query, Mapping):
        raise invalid('"value" must be of type object')
    check_query_size([query], limits)
    for key in query:
        if key not in QUERY_KEYS:
            raise invalid(f'"{key}" is not allowed')
    timezone = canonical_timezone(query.get("timezone", default_timezone))
    state = _Normalizer(model, ctx, resolve_timezone(timezone), now)
    measures = _ids(query, "measures", MEMBER_ID)
    dimension_ids = _ids(query, "dimensions", DIMENSION_ID)
    segments = _ids(query, "segments", MEMBER_ID)
    for name in measures:
        state.member(name, ("measure",), selected=True)
    for name in segments:
        state.member(name, ("segment",), selected=True)
    dimensions = tuple(d for d in dimension_ids if d.count(".") == 1)
    for name in dimensions:
        state.member(name, ("dimension",), selected=True)
    time_dimensions = _time_dimensions(state, query.get("timeDimensions"))
    moved = tuple(
        _time_dimension(state, {"dimension": d.rsplit(".", 1)[0], "granularity": d.rsplit(".", 1)[1]}, "dimensions")
        for d in dimension_ids
        if d.count(".") == 2
    )
    time_dimensions = (*time_dimensions, *moved)
    if not measures and not dimensions and not any(td.granularity for td in time_dimensions):
        raise QueryError(_EMPTY_QUERY)
    filters = _filter_list(state, query.get("filters"))
    limit = _integer(query, "limit")
    if limit is not None and limit > limits.maximum:
        raise QueryLimitError()
    given = frozenset(k for k in query if query.get(k) is not None)
    normalized = NormalizedQuery(
        measures=measures,
        dimensions=dimensions,
        segments=segments,
        time_dimensions=time_dimensions,
        filters=filters,
        limit=min(limits.default, limits.maximum) if limit is None else limit,
        offset=_integer(query, "offset"),
        total=_boolean(query, "total"),
        timezone=timezone,
        ungrouped=_boolean(query, "ungrouped"),
        response_format=_choice(query, "responseFormat", RESPONSE_FORMATS),
        join_hints=_join_hints(state, query.get("joinHints")),
        given=given,
    )
    _choice(query, "cache", CACHE_MODES)
    _choice(query, "cacheMode", CACHE_MODES)
    _boolean(query, "renewQuery")
    order = _order(state, query.get("order")) if "order" in given else _default_order(normalized)
    return replace(normalized, order=order)


def compare_date_range_queries(query: NormalizedQuery) -> list[NormalizedQuery]:
    """A ``compareDateRange`` query fanned out: one query per range (or ``[query]`` when there is none)."""
    for index, td in enumerate(query.time_dimensions):
        if td.compare_date_range is not None:
            result = []
            for date_range in td.compare_date_range:
                tds = list(query.time_dimensions)
                tds[index] = replace(td, date_range=date_range, compare_date_range=None)
                result.append(replace(query, time_dimensions=tuple(tds)))
            return result
    return [query]


def _ids(query: Mapping[str, Any], key: str, pattern: re.Pattern[str]) -> tuple[str, ...]:
    value = query.get(key)
    if value is None:
        return ()
    if not isinstance(value, list):
        raise invalid(f'"{key}" must be an array')
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise invalid(f'"{key}[{index}]" must be a string')
        if not pattern.match(item):
            raise invalid(
                f'"{key}[{index}]" with value "{item}" fails to match the required pattern: /{pattern.pattern}/'
            )
    return tuple(dict.fromkeys(value))


def _integer(query: Mapping[str, Any], key: str) -> int | None:
    value = query.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid(f'"{key}" must be a number')
    if isinstance(value, float) and not value.is_integer():
        raise invalid(f'"{key}" must be an integer')
    if value < 0:
        raise invalid(f'"{key}" must be greater than or equal to 0')
    if value > MAX_BIGINT:  # what a database can count to
        raise invalid(f'"{key}" must be less than or equal to {MAX_BIGINT}')
    return int(value)


def _boolean(query: Mapping[str, Any], key: str) -> bool | None:
    value = query.get(key)
    if value is not None and not isinstance(value, bool):
        raise invalid(f'"{key}" must be a boolean')
    return value


def _choice(query: Mapping[str, Any], key: str, options: tuple[str, ...]) -> str | None:
    value = query.get(key)
    if value is not None and value not in options:
        raise invalid(f'"{key}" must be one of [{", ".join(options)}]')
    return value


def _join_hints(state: _Normalizer, value: Any) -> tuple[tuple[str, ...], ...]:
    model = state.model
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(h, list) for h in value):
        raise invalid('"joinHints" must be an array of arrays of cube names')
    hints = []
    for hint in value:
        for cube in hint:
            known = isinstance(cube, str) and cube in model.entities and not model.entities[cube].is_view
            if state.ctx.only_granted and not (known and not state.access(cube).denied):
                raise AccessDenied(NOT_GRANTED.format(name=cube))
            if not known:
                raise QueryError(f"Unknown cube in joinHints: '{cube}'")
        hints.append(tuple(hint))
    return tuple(hints)


def _time_dimensions(state: _Normalizer, value: Any) -> tuple[TimeDimensionSpec, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise invalid('"timeDimensions" must be an array')
    result = tuple(_time_dimension(state, item, f"timeDimensions[{i}]") for i, item in enumerate(value))
    if sum(td.compare_date_range is not None for td in result) > 1:
        raise invalid("only one time dimension may have compareDateRange")
    return result


def _time_dimension(state: _Normalizer, item: Any, path: str) -> TimeDimensionSpec:
    if not isinstance(item, Mapping):
        raise invalid(f'"{path}" must be of type object')
    for key in item:
        if key not in ("dimension", "granularity", "dateRange", "compareDateRange"):
            raise invalid(f'"{path}.{key}" is not allowed')
    name = item.get("dimension")
    if not isinstance(name, str):
        raise invalid(f'"{path}.dimension" is required')
    if not MEMBER_ID.match(name):
        raise invalid(f'"{path}.dimension" with value "{name}" fails to match the required pattern')
    dimension = state.member(name, ("dimension",), selected=True)
    if not isinstance(dimension, Dimension) or dimension.type != "time":
        raise QueryError(f"'{name}' is not a time dimension")
    granularity = item.get("granularity")
    if granularity is not None:
        if not isinstance(granularity, str) or len(granularity) > 128:
            raise invalid(f'"{path}.granularity" must be a string of at most 128 characters')
        if granularity not in PREDEFINED_GRANULARITIES and granularity not in dimension.granularities:
            raise QueryError(f'Granularity "{granularity}" does not exist in dimension {name}')
    if item.get("dateRange") is not None and item.get("compareDateRange") is not None:
        raise invalid(f'"{path}" contains a conflict between optional exclusive peers [dateRange, compareDateRange]')
    date_range = None
    if item.get("dateRange") is not None:
        date_range = resolve_date_range(item["dateRange"], state.zone, state.now)
    compare = None
    if item.get("compareDateRange") is not None:
        ranges = item["compareDateRange"]
        if not isinstance(ranges, list) or not ranges:
            raise invalid(f'"{path}.compareDateRange" must be an array of date ranges')
        compare = tuple(resolve_date_range(r, state.zone, state.now) for r in ranges)
    return TimeDimensionSpec(name, granularity, date_range, compare)


def _filter_list(state: _Normalizer, value: Any) -> tuple[FilterNode, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise invalid('"filters" must be an array')
    return tuple(_filter(state, item, f"filters[{i}]")[0] for i, item in enumerate(value))


def _filter(state: _Normalizer, item: Any, path: str) -> tuple[FilterNode, frozenset[str]]:
    """The normalized filter and the member kinds under it (to forbid mixing in one group)."""
    if not isinstance(item, Mapping):
        raise invalid(f'"{path}" must be of type object')
    groups = [key for key in ("and", "or") if key in item]
    if groups:
        if len(item) != 1:
            raise invalid(f'"{path}" must contain exactly one of [and, or] and nothing else')
        kind = groups[0]
        items = item[kind]
        if not isinstance(items, list):
            raise invalid(f'"{path}.{kind}" must be an array')
        parts = [_filter(state, sub, f"{path}.{kind}[{i}]") for i, sub in enumerate(items)]
        kinds = frozenset().union(*(k for _, k in parts)) if parts else frozenset()
        if len(kinds) > 1:
            raise QueryError("You cannot use dimension and measure in same condition")
        return FilterGroup(kind, tuple(node for node, _ in parts)), kinds  # type: ignore[arg-type]
    for key in item:
        if key not in ("member", "dimension", "operator", "values"):
            raise invalid(f'"{path}.{key}" is not allowed')
    if ("member" in item) == ("dimension" in item):
        raise invalid(f'"{path}" must contain exactly one of [member, dimension]')
    name = item.get("member", item.get("dimension"))
    if not isinstance(name, str) or not MEMBER_ID.match(name):
        raise invalid(f'"{path}.member" with value "{name}" fails to match the required pattern')
    operator = item.get("operator")
    if operator not in FILTER_OPERATORS:
        raise invalid(f'"{path}.operator" must be one of [{", ".join(FILTER_OPERATORS)}]')
    member = state.member(name, ("dimension", "measure"), selected=False)
    values = _filter_values(item.get("values"), operator, path)
    if operator == "measureFilter" and member.kind != "measure":
        raise QueryError(f"measureFilter needs a measure, got '{name}'")
    if operator in DATE_OPERATORS:
        if not isinstance(member, Dimension) or member.type != "time":
            raise QueryError(f"'{name}': operator {operator} needs a time dimension")
        values = _date_values(state, values or ())
    elif operator in TYPED_OPERATORS and values:
        check_typed_values(name, value_type(member), values)
    return FilterCondition(name, operator, values), frozenset({member.kind})


def _filter_values(value: Any, operator: str, path: str) -> tuple[str | None, ...] | None:
    if value is None:
        if operator in VALUELESS_OPERATORS:
            return None
        raise invalid(f'"{path}.values" is required for operator {operator}')
    if not isinstance(value, list):
        raise invalid(f'"{path}.values" must be an array')
    if not value and operator not in VALUELESS_OPERATORS:
        raise invalid(f'"{path}.values" must contain at least 1 items')
    for index, v in enumerate(value):
        if v is not None and not isinstance(v, str | int | float | bool):
            raise invalid(f'"{path}.values[{index}]" must be a string, number, boolean or null')
    return tuple(stringify(v) for v in value)


def _date_values(state: _Normalizer, values: tuple[str | None, ...]) -> tuple[str | None, ...]:
    """A single relative value becomes its range; absolute values are checked."""
    if len(values) == 1 and values[0] is not None and not is_absolute(values[0]):
        return resolve_date_range(values[0], state.zone, state.now)
    for value in values:
        if value is None:
            raise QueryError("Date filter values may not be null")
        pad_start(value, state.zone)
    if len(values) > 2:
        raise QueryError("Date filters take one or two values")
    return values


def _order(state: _Normalizer, value: Any) -> tuple[OrderSpec, ...]:
    pairs: list[tuple[Any, Any]]
    if isinstance(value, Mapping):
        pairs = list(value.items())
    elif isinstance(value, list):
        pairs = []
        for index, item in enumerate(value):
            if not isinstance(item, list) or len(item) != 2:
                raise invalid(f'"order[{index}]" must be a [member, direction] pair')
            pairs.append((item[0], item[1]))
    else:
        raise invalid('"order" must be an object or an array')
    result = []
    for member, direction in pairs:
        if not isinstance(member, str) or not ORDER_ID.match(member):
            raise invalid(f'"order" key "{member}" fails to match the required pattern')
        if direction not in ("asc", "desc"):
            raise invalid(f'"order.{member}" must be one of [asc, desc]')
        if member.count(".") == 1 and (member not in state.model.members or state.ctx.only_granted):
            state.member(member, ("measure", "dimension"), selected=False)
        result.append(OrderSpec(member, direction == "desc"))
    return tuple(result)


def _default_order(query: NormalizedQuery) -> tuple[OrderSpec, ...]:
    """No ``order``: first time dimension with granularity asc, else first measure desc, else first dimension."""
    for td in query.time_dimensions:
        if td.granularity:
            return (OrderSpec(td.dimension, False),)
    if query.measures:
        return (OrderSpec(query.measures[0], True),)
    if query.dimensions:
        return (OrderSpec(query.dimensions[0], False),)
    return ()
