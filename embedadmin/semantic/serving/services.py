"""The Core Data API as functions of a deployment and a query context, with no HTTP in sight.

The endpoints in :mod:`embedadmin.semantic.serving.views` call these after routing and token verification; the chat
tools call ``semantic_meta`` and ``semantic_cubesql`` with the context of the user they answer, and other code may
call the rest the same way::

    body = semantic_meta(deployment=deployment, ctx=ctx)
    body = semantic_load(deployment=deployment, ctx=ctx, query={"measures": ["orders.count"]}, query_type="multi")

Each raises an :class:`~embedadmin.core.errors.ApiError` (``ModelError``/``QueryError``/``QueryLimitError`` 400,
:class:`DataSourceFailure` 500, 503 when the data source cannot be reached) or, from :func:`semantic_load` (and
:func:`semantic_cubesql` called with ``throw_continue_wait=True``),
:class:`~embedadmin.semantic.serving.cache.ContinueWait`
when the query outlives ``SEMANTIC["CONTINUE_WAIT_SECONDS"]`` (repeat the call: it re-attaches to the running
query).

A deployment serves the last model of its ``model_dir`` that compiled. When the files on disk do not compile
any more, queries keep running on that model, and an error a query meets (an unknown member the broken
file was meant to add) names the file, line and member at fault too.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from embedadmin.accounts.models import Deployment
from embedadmin.core.errors import ApiError
from embedadmin.core.memory import ByteLRU
from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.cubesql.plan import CubeSqlPlan, cubesql_plan
from embedadmin.semantic.errors import ModelError, ModelProblem, QueryError
from embedadmin.semantic.modeling.model import CompiledModel
from embedadmin.semantic.modeling.registry import ModelVersion, load_model
from embedadmin.semantic.query.normalize import CACHE_MODES, Limits
from embedadmin.semantic.results.grants import EntityGrant, entity_grants
from embedadmin.semantic.results.meta import administrator_meta, meta
from embedadmin.semantic.results.responses import dry_run_response, load_response, sql_response
from embedadmin.semantic.serving.answers import AnswerMemory, RequestShapes, ResultUse, request_digest, time_key
from embedadmin.semantic.serving.cache import CachedResult, CacheMode, ContinueWait, query_runner, result_cache_key
from embedadmin.semantic.serving.pre_aggregations import plan_on_rollups, rollup_read
from embedadmin.semantic.serving.tenancy import caller_tenancy
from embedadmin.semantic.sources.base import (
    CancelScope,
    DataSource,
    DataSourceError,
    DataSourceUnavailable,
    QueryResult,
)
from embedadmin.semantic.sources.registry import dialect_of, get_data_source, queried_dialects
from embedadmin.semantic.sql.planning import LoadPlan, QueryOutcome, parse_query_param, plan_queries
from embedadmin.semantic.sql.planning import refresh_interval as result_refresh_interval

META_JSON_CACHE_SIZE = 1024


class DataSourceFailure(ApiError):
    """The data source could not answer (unreachable, timed out, refused the SQL): 500 with its safe message."""

    status = 500


class DataSourceUnavailableFailure(DataSourceFailure):
    """The data source cannot be reached right now (down, restarting, out of connections): 503, retry later."""

    status = 503


@dataclass(frozen=True)
class ServedModel:
    """What a deployment serves right now: its compiled model, the error of its files on disk if they do not
    compile, and where its data lives."""

    deployment: Deployment
    model: CompiledModel
    error: ModelError | None
    source_url: str
    dialect: str

    def require_source(self) -> None:
        """Refuse a query for a deployment whose data source is not configured."""
        if not self.source_url:
            raise ApiError(f"Deployment {self.deployment.pk} has no data source: set one with configure_deployment")
        if self.dialect not in queried_dialects():
            raise ApiError(
                f"Deployment {self.deployment.pk}'s data source is {self.dialect}: its model compiles and is validated "
                "in that dialect, but this server has no driver for it (docs/data-sources.md lists those it queries)"
            )

    def with_model_error(self, exc: QueryError) -> QueryError:
        """``exc``, naming the model's compile error too when the files on disk are broken."""
        if self.error is None:
            return exc
        return QueryError(f"{exc.message}. Note: {self.error.message}; the last version that compiled is serving")


def _model_version(deployment: Deployment, ctx: QueryContext | None) -> tuple[ModelVersion, str, str]:
    """The model version ``ctx`` is served (cached per file version and compile key), its data source URL and
    dialect (:mod:`.tenancy`: a caller whose security context selects no tenant is refused here)."""
    tenancy = caller_tenancy(deployment=deployment, ctx=ctx)
    dialect = dialect_of(tenancy.kind_url)
    version = load_model(
        deployment.model_dir,
        dialect=dialect,
        security_context=tenancy.security_context,
        partial=deployment.load_partial_model,
    )
    return version, tenancy.source_url, dialect


def served_model(*, deployment: Deployment, ctx: QueryContext | None) -> ServedModel:
    """The model ``deployment`` serves ``ctx`` (compiled once per version and compile key, recompiled when a file
    changes), and the data source it reads. Every door of the Core Data API, the dashboards and the chat comes here
    with its caller; ``ctx`` None is the deployment's administrators (the model compiled without a compile key, no
    tenant's data source: :mod:`.tenancy`)."""
    if not deployment.model_dir:
        raise ApiError(f"Deployment {deployment.pk} has no data model: set one with configure_deployment")
    version, url, dialect = _model_version(deployment, ctx)
    return ServedModel(
        deployment=deployment, model=version.require(), error=version.error, source_url=url, dialect=dialect
    )


def _limits() -> Limits:
    semantic = settings.SEMANTIC
    return Limits(
        default=semantic["DEFAULT_QUERY_LIMIT"],
        maximum=semantic["MAX_QUERY_LIMIT"],
        filter_values=settings.LIMITS["MAX_FILTER_VALUES"],
        members=settings.LIMITS["MAX_QUERY_MEMBERS"],
    )


def _plan(served: ServedModel, ctx: QueryContext, query: Any) -> LoadPlan:
    try:
        return plan_queries(served.model, query, ctx, limits=_limits())
    except QueryError as exc:
        raise served.with_model_error(exc) from None


def semantic_meta(
    *,
    deployment: Deployment,
    ctx: QueryContext,
    extended: bool = False,
    only_views: bool = False,
    readable: bool = False,
) -> dict[str, Any]:
    """``/v1/meta`` for ``ctx``: hidden members and members its access policies deny are left out. ``readable``:
    composed for display, each member with the title a person reads it by (``readingTitle``), for the product's own
    pages and the chat; the wire body (:func:`semantic_meta_json`) never has it."""
    served = served_model(deployment=deployment, ctx=ctx)
    return meta(served.model, ctx, extended=extended, only_views=only_views, readable=readable)


def semantic_meta_for_administrator(*, deployment: Deployment) -> dict[str, Any]:
    """``/v1/meta`` as the deployment's administrators read it (the panel's report builder): every cube and view
    with its public members, no access policy applied."""
    return administrator_meta(served_model(deployment=deployment, ctx=None).model)


_meta_json: ByteLRU[tuple[str, bool, bool], bytes] = ByteLRU(
    "meta bodies", settings.LIMITS["META_JSON_CACHE_BYTES"], max_entries=META_JSON_CACHE_SIZE
)


def semantic_meta_json(
    *, deployment: Deployment, ctx: QueryContext, extended: bool = False, only_views: bool = False
) -> bytes:
    """:func:`semantic_meta` encoded as JSON. The encoding of a large model costs far more than building its
    body, so it is remembered (``LIMITS["META_JSON_CACHE_BYTES"]``): the body's ``compilerId`` names the model
    version and the members this caller may see, so equal ids (with the same options) mean equal bodies."""
    body = semantic_meta(deployment=deployment, ctx=ctx, extended=extended, only_views=only_views)
    key = (body["compilerId"], extended, only_views)
    encoded = _meta_json.get(key)
    if encoded is not None:
        return encoded
    encoded = json_bytes(body)
    _meta_json.put(key, encoded, len(encoded))
    return encoded


def json_bytes(body: Any) -> bytes:
    """A Core Data API body as compact UTF-8 JSON. Text UTF-8 cannot encode (an unpaired surrogate a data
    source returned) is written as JSON's ``\\u`` escape instead: still valid JSON, never a failed answer."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=str)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(body, separators=(",", ":"), default=str).encode()


def semantic_grants(*, deployment: Deployment, ctx: QueryContext) -> list[EntityGrant]:
    """Every cube and view of the deployment's model as ``ctx`` may read it, denied ones included: the members, the
    row filters with ``ctx``'s values filled in, or the reason it is denied (decided as ``/v1/meta`` and every query
    decide it: :mod:`embedadmin.semantic.results.grants`)."""
    return entity_grants(served_model(deployment=deployment, ctx=ctx).model, ctx)


def semantic_sql(*, deployment: Deployment, ctx: QueryContext, query: Any) -> Any:
    """``/v1/sql``: the SQL ``query`` compiles to for ``ctx`` (access-policy filters included)."""
    served = served_model(deployment=deployment, ctx=ctx)
    plan = _plan(served, ctx, query)
    return sql_response(plan_on_rollups(served=served, ctx=ctx, plan=plan) if served.source_url else plan)


def semantic_dry_run(*, deployment: Deployment, ctx: QueryContext, query: Any) -> dict[str, Any]:
    """``/v1/dry-run``: the normalized and planned query, not executed."""
    return dry_run_response(_plan(served_model(deployment=deployment, ctx=ctx), ctx, query))


def cache_mode(*, requested: Any, query: Any) -> CacheMode:
    """The cache mode of a request: its ``cache`` parameter, else the query's ``cache`` or ``cacheMode``,
    else ``must-revalidate`` for a query with ``renewQuery: true`` (Cube 1.6), else ``stale-if-slow``."""
    first = query[0] if isinstance(query, list) and query else query
    inner = first if isinstance(first, dict) else {}
    for value in (requested, inner.get("cache"), inner.get("cacheMode")):
        if value is not None:
            if value not in CACHE_MODES:
                raise QueryError(f'Invalid query format: "cache" must be one of [{", ".join(CACHE_MODES)}]')
            return CacheMode(value)
    return CacheMode.MUST_REVALIDATE if inner.get("renewQuery") is True else CacheMode.STALE_IF_SLOW


def semantic_load(
    *,
    deployment: Deployment,
    ctx: QueryContext,
    query: Any,
    query_type: str | None = None,
    cache: str | None = None,
    cancel: CancelScope | None = None,
) -> dict[str, Any]:
    """``/v1/load``: run ``query`` (an object, an array or a JSON string of either) for ``ctx``.

    ``query_type="multi"`` answers Cube's multi envelope (what ``@cubejs-client/core`` always asks for);
    ``cache`` is Cube's cache mode. Raises ``ContinueWait`` when the query is still running after the wait.
    ``cancel.cancel()`` stops its statements in the data source
    (:class:`~embedadmin.semantic.sources.base.CancelScope`).
    """
    return answer_load(
        plan_load(
            served=served_model(deployment=deployment, ctx=ctx),
            ctx=ctx,
            query=query,
            query_type=query_type,
            cache=cache,
        ),
        cancel=cancel,
    ).body


_answers = AnswerMemory()
_shapes = RequestShapes()


def semantic_load_json(
    *, deployment: Deployment, ctx: QueryContext, method: str, raw: bytes, params: Callable[[], dict[str, Any]]
) -> bytes:
    """``/v1/load`` encoded as JSON, for a request's method and raw query string or body, whose Cube parameters
    ``params()`` reads (``query``; ``queryType`` and ``cache``, strings or None). An answer kept for the same
    request is given again while everything it depends on is unchanged (:mod:`.answers`)."""
    digest = request_digest(method, raw)
    shape = _shapes.get(digest, params)
    served = served_model(deployment=deployment, ctx=ctx)
    key = None
    if shape is not None:
        key = (deployment.pk, served.source_url, served.model.compiler_id, ctx.identity, digest, time_key(shape))
        kept = _answers.get(key, query_runner())
        if kept is not None:
            return kept
    given = params()
    work = plan_load(
        served=served, ctx=ctx, query=given.get("query"), query_type=given.get("queryType"), cache=given.get("cache")
    )
    answer = answer_load(work)
    body = json_bytes(answer.body)
    if key is not None and answer.reuse is not None:
        _answers.keep(key, body, answer.reuse)
    return body


@dataclass(frozen=True)
class LoadAnswer:
    """A ``/v1/load`` body (:func:`answer_load`), and when it may be given again as it is: ``reuse`` lists the
    results it was made of when all were fresh and the request read the cache (None otherwise)."""

    body: dict[str, Any]
    reuse: tuple[ResultUse, ...] | None


@dataclass(frozen=True)
class ResultRead:
    """One statement of a load, read through the result cache: its cache key, SQL, parameters and
    refresh interval."""

    key: str
    sql: str
    params: tuple[Any, ...]
    every: float
    source: DataSource | None = None  # the pre-aggregation store's, for a query a rollup answers


@dataclass(frozen=True)
class LoadWork:
    """A ``/v1/load`` request planned: the model served, its compiled queries, the cache mode, and the
    results to read in order (each query's rows, then its total when it asks for one), which
    :func:`answer_load` reads through the result cache."""

    served: ServedModel
    plan: LoadPlan
    mode: CacheMode
    multi: bool
    reads: tuple[ResultRead, ...]


def plan_load(
    *, served: ServedModel, ctx: QueryContext, query: Any, query_type: str | None = None, cache: str | None = None
) -> LoadWork:
    """Parse, normalize and compile a load's query for ``ctx`` (no data is read)."""
    raw = parse_query_param(query)
    mode = cache_mode(requested=cache, query=raw)
    plan = _plan(served, ctx, raw)
    served.require_source()
    plan = plan_on_rollups(served=served, ctx=ctx, plan=plan)  # the queries a built rollup answers, rewritten
    reads = []
    for compiled in plan.queries:
        every = result_refresh_interval(served.model, compiled)
        store = rollup_read(compiled)
        reads.append(_result_read(served, compiled.sql, compiled.params, ctx.identity, every, store))
        if compiled.total_sql:
            reads.append(_result_read(served, compiled.total_sql, compiled.params, ctx.identity, every, store))
    return LoadWork(served=served, plan=plan, mode=mode, multi=query_type == "multi", reads=tuple(reads))


def answer_load(work: LoadWork, *, cancel: CancelScope | None = None) -> LoadAnswer:
    """The answer to ``work``, its results read through the result cache on this thread."""
    outcomes = []
    used: list[ResultUse] = []
    reusable = work.mode is not CacheMode.NO_CACHE
    pairs = iter([(read, _cached_rows(work.served, read, work.mode, cancel)) for read in work.reads])
    for compiled in work.plan.queries:
        mine = [next(pairs), *([next(pairs)] if compiled.total_sql else [])]  # the rows, then the total
        for read, run in mine:
            reusable = reusable and not run.stale
            used.append(ResultUse(key=run.key, refreshed_at=run.refreshed_at, every=read.every))
        main = mine[0][1]
        total = None
        if compiled.total_sql:
            counted = mine[1][1]
            total = int(counted.result.rows[0][0]) if counted.result.rows else 0
        outcomes.append(
            QueryOutcome(
                rows=main.result.rows,
                total=total,
                last_refresh_time=datetime.fromtimestamp(main.refreshed_at, UTC),
                slow_query=main.stale,
            )
        )
    model = work.served.model
    body = load_response(model, work.plan, outcomes, multi=work.multi, db_type=work.served.dialect)
    return LoadAnswer(body=body, reuse=tuple(used) if reusable else None)


@dataclass(frozen=True)
class CubeSqlResult:
    """A semantic SQL statement's plan (columns, compiled query) and the rows it read."""

    plan: CubeSqlPlan
    rows: Any
    last_refresh_time: datetime


def semantic_cubesql(
    *,
    deployment: Deployment,
    ctx: QueryContext,
    sql: str,
    timezone: str = "UTC",
    cache: str | None = None,
    throw_continue_wait: bool = False,
    cancel: CancelScope | None = None,
) -> CubeSqlResult:
    """``/v1/cubesql`` (and the chat tool ``serviceSqlApi``): run one semantic SQL statement for ``ctx``.

    As in Cube, a statement still running after the wait raises ``ContinueWait`` only when the caller asks for
    it (``throw_continue_wait``); otherwise this waits, re-attaching to the running query, until it ends or
    times out.
    """
    served = served_model(deployment=deployment, ctx=ctx)
    mode = cache_mode(requested=cache, query={})
    try:
        plan = cubesql_plan(served.model, sql, ctx, timezone=timezone, row_limit=_limits().maximum)
    except QueryError as exc:
        raise served.with_model_error(exc) from None
    served.require_source()
    plan = dataclasses.replace(plan, load_plan=plan_on_rollups(served=served, ctx=ctx, plan=plan.load_plan))
    compiled = plan.compiled
    every = result_refresh_interval(served.model, compiled)
    read = _result_read(served, compiled.sql, compiled.params, ctx.identity, every, rollup_read(compiled))
    while True:
        try:
            cached = _cached_rows(served, read, mode, cancel)
            break
        except ContinueWait:
            if throw_continue_wait:
                raise
    rows = plan.finished(cached.result.rows)
    return CubeSqlResult(plan, rows, datetime.fromtimestamp(cached.refreshed_at, UTC))


def _result_read(
    served: ServedModel,
    sql: str,
    params: tuple[Any, ...],
    identity: str,
    every: float,
    store: tuple[DataSource, str] | None = None,
) -> ResultRead:
    """``store``: the pre-aggregation store's source and name, for a query answered from a rollup."""
    source, name = store if store is not None else (None, served.source_url)
    key = result_cache_key(source=name, sql=sql, params=params, context=identity)
    return ResultRead(key=key, sql=sql, params=params, every=every, source=source)


def _cached_rows(
    served: ServedModel, read: ResultRead, mode: CacheMode, cancel: CancelScope | None = None
) -> CachedResult:
    """``read``'s rows through the result cache: run on the data source when the cache has no fresh copy
    (stopped there by ``cancel``). A data source that cannot be reached is a 503."""
    timeout_s = settings.SEMANTIC["QUERY_TIMEOUT_SECONDS"]

    def run() -> QueryResult:
        source = read.source or get_data_source(served.source_url)
        return source.execute(read.sql, read.params, timeout_s=timeout_s, cancel=cancel)

    try:
        return query_runner().load(
            key=read.key,
            run=run,
            refresh_every_s=read.every,
            wait_s=settings.SEMANTIC["CONTINUE_WAIT_SECONDS"],
            job_timeout_s=timeout_s,
            mode=mode,
        )
    except DataSourceUnavailable as exc:
        raise DataSourceUnavailableFailure(str(exc)) from None
    except DataSourceError as exc:
        raise DataSourceFailure(str(exc)) from None


@dataclass(frozen=True)
class ModelStatus:
    """What the panel shows about a deployment's data model: what serves and what is broken."""

    configured: bool
    compiler_id: str | None = None
    entities: int = 0
    problems: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()  # "load what compiles": the faults of what is left out (file:line: member: why)


def model_status(*, deployment: Deployment) -> ModelStatus:
    """The deployment's model as it would serve now, with every compile problem (file, line, member)."""
    if not deployment.model_dir:
        return ModelStatus(configured=False)
    version, _, _ = _model_version(deployment, None)
    problems = tuple(str(p) for p in version.error.problems) if version.error else ()
    if version.model is None:
        return ModelStatus(configured=True, problems=problems)
    return ModelStatus(
        configured=True,
        compiler_id=version.model.compiler_id,
        entities=len(version.model.entities),
        problems=problems,
        left_out=tuple(str(ModelProblem(e.file, e.line, e.member, e.message)) for e in version.model.compiler_errors),
    )
