"""A request's plan: its queries normalized for the caller and compiled to SQL (``plan_queries``).

Run every ``plan.queries[i].sql`` (and ``total_sql`` when set) with its ``params``, then shape the answer with
:mod:`embedadmin.semantic.results.responses`. A plan is pure: planning the same request twice costs one lookup in
a per-model cache, and a query that differs from a known one only in its filter values is rebound, not compiled.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from embedadmin.core.fields import loads_json
from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.errors import QueryError
from embedadmin.semantic.modeling.intervals import parse_interval
from embedadmin.semantic.modeling.model import CompiledModel
from embedadmin.semantic.query.dates import local_now, resolve_timezone
from embedadmin.semantic.query.normalize import Limits, compare_date_range_queries, normalize_query
from embedadmin.semantic.query.normalized import NormalizedQuery
from embedadmin.semantic.sql.builder import CompiledQuery, compile_query
from embedadmin.semantic.sql.shapes import covers, rebind, same_statement, shape_of

REGULAR = "regularQuery"
COMPARE_DATE_RANGE = "compareDateRangeQuery"
BLENDING = "blendingQuery"
_CACHE_SIZE = 2048
DEFAULT_REFRESH_SECONDS = 10
_cache_lock = threading.Lock()


@dataclass(frozen=True)
class LoadPlan:
    """What one request asks for: its query type and the compiled statement of each (fanned-out) query."""

    query_type: str
    queries: tuple[CompiledQuery, ...]

    @property
    def normalized(self) -> tuple[NormalizedQuery, ...]:
        return tuple(q.query for q in self.queries)


@dataclass(frozen=True)
class QueryOutcome:
    """What running one compiled query produced: rows in the statement's column order, and the total."""

    rows: Sequence[Sequence[Any]]
    total: int | None = None
    last_refresh_time: datetime | None = None
    slow_query: bool = False


def refresh_interval(model: CompiledModel, compiled: CompiledQuery) -> float:
    """Seconds a cached result of ``compiled`` stays fresh: the shortest ``refresh_key.every`` of the cubes it
    reads (Cube's default, 10 s, for cubes without one, or with a cron or ``sql`` refresh key)."""
    cubes = [compiled.hints.get("root"), *compiled.hints.get("joins", [])]
    intervals = []
    for name in cubes:
        entity = model.entities.get(name) if name else None
        every = entity.refresh_key.every if entity is not None and entity.refresh_key is not None else None
        try:
            parsed = parse_interval(str(every)) if every else None
        except ValueError:
            parsed = None
        intervals.append(parsed.months * 30 * 86400 + parsed.seconds if parsed else DEFAULT_REFRESH_SECONDS)
    return float(min(intervals, default=DEFAULT_REFRESH_SECONDS))


def parse_query_param(value: Any) -> Any:
    """``query`` as sent: an object or array, or a JSON string of one (GET)."""
    if value is None or value == "undefined":
        raise QueryError("Query param is required")
    if isinstance(value, str | bytes):
        try:
            return loads_json(value)
        except ValueError as exc:
            raise QueryError(f"Unable to decode query param as JSON, error: {exc}") from None
    return value


def plan_queries(
    model: CompiledModel,
    query_param: Any,
    ctx: QueryContext,
    *,
    now: datetime | None = None,
    default_timezone: str = "UTC",
    limits: Limits = Limits(),  # noqa: B008 - frozen dataclass
) -> LoadPlan:
    """Normalize, fan out (``compareDateRange``) and compile a request's query or queries."""
    raw = parse_query_param(query_param)
    items = raw if isinstance(raw, list) else [raw]
    if not items:
        raise QueryError('Invalid query format: "value" must contain at least 1 items')
    normalized = [
        normalize_query(model, item, ctx, now=now, default_timezone=default_timezone, limits=limits) for item in items
    ]
    expanded = [part for query in normalized for part in compare_date_range_queries(query)]
    if len(expanded) > len(normalized):
        if len(normalized) > 1:
            raise QueryError("compareDateRange is not supported in data blending queries")
        query_type = COMPARE_DATE_RANGE
    elif len(normalized) > 1:
        query_type = BLENDING
        _check_blending(normalized)
    else:
        query_type = REGULAR
    return LoadPlan(query_type, tuple(compile_cached(model, query, ctx, now=now) for query in expanded))


def _check_blending(queries: list[NormalizedQuery]) -> None:
    granularities = set()
    for query in queries:
        granularity = next((td.granularity for td in query.time_dimensions if td.granularity), None)
        if granularity is None:
            raise QueryError("Data blending query without granularity is not supported")
        granularities.add(granularity)
    if len(granularities) > 1:
        raise QueryError("Data blending query granularities must match")


@dataclass(frozen=True)
class _Shape:
    """A shape's statement (see :mod:`.shapes`) and the exact key of the query it was compiled for;
    ``trusted`` once a rebinding reproduced a full compile. ``template`` None: a rebinding did not, or could
    not (:func:`.shapes.covers`), so the shape is always compiled."""

    template: CompiledQuery | None
    query_key: str = ""
    trusted: bool = False


def compile_cached(
    model: CompiledModel, query: NormalizedQuery, ctx: QueryContext, *, now: datetime | None = None
) -> CompiledQuery:
    """:func:`compile_query`, remembered per model version (keyed by query, caller where policies apply,
    and the current year, which custom granularities without an origin depend on); a query that differs
    from a known one only in its filter values is rebound rather than compiled (:mod:`.shapes`)."""
    governed = model.caches.get("governed")
    if governed is None:
        governed = model.caches["governed"] = any(e.access_policies is not None for e in model.entities.values())
    year = local_now(now, resolve_timezone(query.timezone)).year
    caller = ctx.identity if governed else ""
    key = (repr(query), caller, year)
    with _cache_lock:
        cache: OrderedDict[tuple[str, str, int], CompiledQuery] = model.caches.setdefault("compiled", OrderedDict())
        found = cache.get(key)
        if found is not None:
            cache.move_to_end(key)
            return found
    shape_key = (repr(shape_of(query)), caller, year)
    with _cache_lock:
        shapes: OrderedDict[tuple[str, str, int], _Shape] = model.caches.setdefault("shapes", OrderedDict())
        shape = shapes.get(shape_key)
        if shape is not None:
            shapes.move_to_end(shape_key)
    if shape is not None and shape.trusted:
        assert shape.template is not None
        compiled = rebind(shape.template, query)
    else:
        compiled = compile_query(model, query, ctx, now=now)
        if shape is None:
            shape = _Shape(compiled, key[0]) if covers(compiled) else _Shape(None)
        elif shape.template is not None and shape.query_key != key[0]:
            trusted = same_statement(rebind(shape.template, query), compiled)
            shape = _Shape(shape.template, shape.query_key, trusted=True) if trusted else _Shape(None)
    with _cache_lock:
        cache[key] = compiled
        shapes[shape_key] = shape
        for memory in (cache, shapes):
            if len(memory) > _CACHE_SIZE:
                memory.popitem(last=False)
    return compiled
