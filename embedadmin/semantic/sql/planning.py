"""A request's plan: its queries normalized for the caller and compiled to SQL (``plan_queries``).

Run every ``plan.queries[i].sql`` (and ``total_sql`` when set) with its ``params``, then shape the answer with
:mod:`embedadmin.semantic.results.responses`. A plan is pure: planning the same request twice costs one lookup in
a per-model cache, and a query that differs from a known one only in its filter values is rebound, not compiled.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings

from embedadmin.core.fields import loads_json
from embedadmin.core.memory import ByteLRU
from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.errors import QueryError
from embedadmin.semantic.modeling.intervals import parse_interval
from embedadmin.semantic.modeling.model import CompiledModel
from embedadmin.semantic.query.dates import local_now, resolve_timezone
from embedadmin.semantic.query.normalize import (
    Limits,
    check_query_size,
    compare_date_range_queries,
    normalize_query,
)
from embedadmin.semantic.query.normalized import NormalizedQuery
from embedadmin.semantic.sql.builder import CompiledQuery, compile_query
from embedadmin.semantic.sql.context import reads_security_context
from embedadmin.semantic.sql.shapes import covers, rebind, same_statement, shape_of

REGULAR = "regularQuery"
COMPARE_DATE_RANGE = "compareDateRangeQuery"
BLENDING = "blendingQuery"
DEFAULT_REFRESH_SECONDS = 10


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
    check_query_size(items, limits)
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
    """What is kept for a query shape (see :mod:`.shapes`): the statement compiled for one query of that shape and
    the digest of that query (given again as is when the same query comes back). ``trusted`` once a rebinding
    reproduced a full compile of another query of the shape: its other queries are then rebound, not compiled.
    ``rebindable`` False when a rebinding did not, or could not (:func:`.shapes.covers`): the shape's queries are
    then always compiled, and only the latest is kept."""

    compiled: CompiledQuery
    query_digest: bytes
    trusted: bool = False
    rebindable: bool = True


def _statement_size(compiled: CompiledQuery, shape_key: str) -> int:
    """A rough size of what a kept shape holds: its key, its statement's text, and its query's and parameters'
    values (each value counted by its text plus a Python object's overhead)."""
    values = sum(len(value) if isinstance(value, str) else 8 for value in compiled.params)
    return (
        len(shape_key) * 2
        + len(compiled.sql) * 2
        + len(compiled.total_sql or "")
        + values * 2
        + 120 * (len(compiled.params) + len(compiled.origins))
    )


_compiled: ByteLRU[tuple[object, str, int, str], _Shape] = ByteLRU(
    "compiled queries", getattr(settings, "LIMITS", {}).get("COMPILED_QUERY_CACHE_BYTES", 32 * 1024 * 1024)
)


def compiled_cache() -> ByteLRU[tuple[object, str, int, str], _Shape]:
    """The process's compiled-query cache (tests and drills read its byte total)."""
    return _compiled


def compile_cached(
    model: CompiledModel, query: NormalizedQuery, ctx: QueryContext, *, now: datetime | None = None
) -> CompiledQuery:
    """:func:`compile_query`, remembered per model version and query *shape* (the query but for its filter
    values; with the caller where policies apply or the model's SQL reads SECURITY_CONTEXT, and the current year,
    which custom granularities without an origin depend on), in one cache of the process bounded in bytes
    (``LIMITS["COMPILED_QUERY_CACHE_BYTES"]``): queries differing only in their filter values share one entry. A
    query of a trusted shape is rebound rather than compiled (:mod:`.shapes`); the query a shape was compiled for
    is given its statement again."""
    governed = model.caches.get("governed")
    if governed is None:
        governed = model.caches["governed"] = any(
            e.access_policies is not None for e in model.entities.values()
        ) or reads_security_context(model)
    token = model.caches.get("token")
    if token is None:
        token = model.caches.setdefault("token", object())  # this model version, for keys of a process-wide cache
    year = local_now(now, resolve_timezone(query.timezone)).year
    caller = ctx.identity if governed else ""
    shape_repr = repr(shape_of(query))
    key = (token, caller, year, shape_repr)
    digest = hashlib.blake2b(repr(query).encode("utf-8", "surrogatepass"), digest_size=20).digest()
    shape = _compiled.get(key)
    if shape is not None:
        if shape.query_digest == digest:
            return shape.compiled
        if shape.trusted:
            return rebind(shape.compiled, query)
    compiled = compile_query(model, query, ctx, now=now)
    if shape is None:
        shape = _Shape(compiled, digest, rebindable=covers(compiled))
    elif shape.rebindable:
        if same_statement(rebind(shape.compiled, query), compiled):
            shape = _Shape(shape.compiled, shape.query_digest, trusted=True)
        else:
            shape = _Shape(compiled, digest, rebindable=False)
    else:
        shape = _Shape(compiled, digest, rebindable=False)  # never rebound: keep the latest for its repeats
    _compiled.put(key, shape, _statement_size(shape.compiled, shape_repr))
    return compiled
