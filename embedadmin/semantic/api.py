"""The service functions the Core Data API endpoints call: plan a request, then shape what came back.

``/v1/load``:   ``plan = plan_queries(model, query_param, ctx)``; run every ``plan.queries[i].sql`` (and
``total_sql`` when set) with its ``params``; ``load_response(model, plan, outcomes, multi=...)``.
``/v1/sql``:    ``sql_response(plan)``.  ``/v1/dry-run``: ``dry_run_response(plan)``.
A plan is pure: planning the same request twice costs one lookup in a per-model cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from embedadmin.core.fields import loads_json

from .context import QueryContext
from .dates import local_now, resolve_timezone
from .errors import QueryError
from .intervals import parse_interval
from .model import CompiledModel
from .normalize import Limits, compare_date_range_queries, normalize_query
from .query import NormalizedQuery
from .results import result_body
from .sql_builder import CompiledQuery, compile_query
from .sql_shapes import covers, rebind, same_statement, shape_of

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
    """A shape's statement (see :mod:`.sql_shapes`) and the exact key of the query it was compiled for;
    ``trusted`` once a rebinding reproduced a full compile. ``template`` None: a rebinding did not, or could
    not (:func:`.sql_shapes.covers`), so the shape is always compiled."""

    template: CompiledQuery | None
    query_key: str = ""
    trusted: bool = False


def compile_cached(
    model: CompiledModel, query: NormalizedQuery, ctx: QueryContext, *, now: datetime | None = None
) -> CompiledQuery:
    """:func:`compile_query`, remembered per model version (keyed by query, caller where policies apply,
    and the current year, which custom granularities without an origin depend on); a query that differs
    from a known one only in its filter values is rebound rather than compiled (:mod:`.sql_shapes`)."""
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


def load_response(
    model: CompiledModel,
    plan: LoadPlan,
    outcomes: Sequence[QueryOutcome],
    *,
    multi: bool,
    db_type: str | None = None,
    data_source: str = "default",
) -> dict[str, Any]:
    """The ``/v1/load`` body: the regular object, or (``queryType=multi``) the multi envelope."""
    if not multi and plan.query_type != REGULAR:
        raise QueryError(f"'{plan.query_type}' query type is not supported by the client.Please update the client.")
    results = []
    for compiled, outcome in zip(plan.queries, outcomes, strict=True):
        results.append(
            result_body(
                model,
                compiled,
                outcome.rows,
                total=outcome.total,
                last_refresh_time=outcome.last_refresh_time,
                db_type=db_type,
                data_source=data_source,
                slow_query=outcome.slow_query,
                extra_row_values=_extra_row_values(plan.query_type, compiled),
            )
        )
    if plan.query_type == BLENDING:
        _add_blending_time(plan, results)
    if not multi:
        return results[0]
    return {
        "queryType": plan.query_type,
        "results": results,
        "pivotQuery": pivot_query(plan),
        "slowQuery": any(o.slow_query for o in outcomes),
    }


def _extra_row_values(query_type: str, compiled: CompiledQuery) -> dict[str, Any] | None:
    if query_type != COMPARE_DATE_RANGE:
        return None
    date_range = next(td.date_range for td in compiled.query.time_dimensions if td.date_range is not None)
    return {"compareDateRange": " - ".join(date_range)}


def _add_blending_time(plan: LoadPlan, results: list[dict[str, Any]]) -> None:
    """Blending rows carry ``time.<granularity>``: the value of their query's first time dimension."""
    for compiled, result in zip(plan.queries, results, strict=True):
        td = next(td for td in compiled.query.time_dimensions if td.granularity)
        key = f"{td.dimension}.{td.granularity}"
        data = result["data"]
        if isinstance(data, list):
            for row in data:
                row[f"time.{td.granularity}"] = row.get(key)


def pivot_query(plan: LoadPlan) -> dict[str, Any]:
    first = plan.queries[0].query.to_json()
    if plan.query_type == COMPARE_DATE_RANGE:
        first["dimensions"] = ["compareDateRange", *first["dimensions"]]
    elif plan.query_type == BLENDING:
        queries = [q.query for q in plan.queries]
        granularity = next(td.granularity for td in queries[0].time_dimensions if td.granularity)
        first["measures"] = list(dict.fromkeys(m for q in queries for m in q.measures))
        first["dimensions"] = list(dict.fromkeys(d for q in queries for d in q.dimensions))
        first["timeDimensions"] = [{"dimension": "time", "granularity": granularity}]
    first["queryType"] = plan.query_type
    return first


def _json_param(value: Any) -> Any:
    if isinstance(value, Decimal):
        return format(value, "f")
    return value


def sql_body(compiled: CompiledQuery) -> dict[str, Any]:
    """One query's ``sql`` object as Cube's ``/v1/sql`` shows it."""
    query = compiled.query
    body: dict[str, Any] = {
        "sql": [compiled.sql, [_json_param(p) for p in compiled.params]],
        "order": query.order_json(),
    }
    td = next((c for c in compiled.columns if c.role == "timeDimension"), None)
    if td is not None:
        body["timeDimensionAlias"] = td.alias
        body["timeDimensionField"] = td.member
    body.update(
        {
            "cacheKeyQueries": [],
            "preAggregations": [],
            "dataSource": "default",
            "aliasNameToMember": compiled.alias_to_member,
            "canUseTransformedQuery": {},
            "memberNames": [c.key for c in compiled.columns],
            "external": False,
            "lambdaQueries": {},
        }
    )
    return body


def sql_response(plan: LoadPlan) -> Any:
    """The ``/v1/sql`` body: ``{"sql": {...}}``, or a list of them for compare/blending queries."""
    if plan.query_type == REGULAR:
        return {"sql": sql_body(plan.queries[0])}
    return [{"sql": sql_body(compiled)} for compiled in plan.queries]


def dry_run_response(plan: LoadPlan) -> dict[str, Any]:
    """The ``/v1/dry-run`` body."""
    return {
        "queryType": plan.query_type,
        "normalizedQueries": [q.query.to_json() for q in plan.queries],
        "queryOrder": [{o.id: "desc" if o.desc else "asc"} for o in plan.queries[0].query.order],
        "transformedQueries": [_transformed(q) for q in plan.queries],
        "pivotQuery": pivot_query(plan),
    }


def _transformed(compiled: CompiledQuery) -> dict[str, Any]:
    query = compiled.query
    return {
        "measures": list(query.measures),
        "sortedDimensions": sorted(query.dimensions),
        "sortedTimeDimensions": sorted(
            [td.dimension, td.granularity] for td in query.time_dimensions if td.granularity
        ),
        "hasMultipliedMeasures": bool(compiled.hints.get("multiplied")),
        "hasCumulativeMeasures": False,
    }
