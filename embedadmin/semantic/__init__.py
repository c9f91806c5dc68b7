"""The semantic layer: Cube-format data models, ``/v1/meta``, and JSON queries compiled to SQL.

It knows nothing of embedding or chat. Its stages are sub-packages, each importing only the ones before it:
``modeling`` (files -> compiled model), ``query`` (a Cube query normalized for a caller, access policies
applied), ``sql`` (the SQL syntax tree and a request's plan), ``results`` (Cube's answers and ``/v1/meta``),
``cubesql`` (semantic SQL), and ``serving`` (HTTP views, routing, tokens, data sources, the result cache and
kept answers). The endpoints and the chat tools call :mod:`.serving.services`, whose
``served_model(deployment=..., ctx=...)`` loads the model the caller is served (per compile key:
:mod:`.serving.tenancy`) and which runs the queries. Underneath, for one model::

    version = load_model(deployment.model_dir, dialect="duckdb")   # cached; recompiles on change
    model = version.require()                                       # ModelError if nothing compiles
    ctx = QueryContext(security_context=payload, groups=groups, user_attributes=attributes)

    body = meta(model, ctx)                                         # GET /v1/meta

    plan = plan_queries(model, request_query, ctx)                  # /v1/load, /v1/sql, /v1/dry-run
    outcomes = [QueryOutcome(rows=execute(q.sql, q.params).rows) for q in plan.queries]
    body = load_response(model, plan, outcomes, multi=query_type == "multi", db_type="duckdb")
    body = sql_response(plan)
    body = dry_run_response(plan)

Errors are :class:`ModelError` (400), :class:`QueryError` (400) and :class:`QueryLimitError` (400; Cube
answers 500), all ``embedadmin.core.errors.ApiError`` subclasses carrying ``status`` and ``message``.
"""

from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.cubesql.plan import (
    CubeSqlColumn,
    CubeSqlPlan,
    cubesql_error_line,
    cubesql_lines,
    cubesql_plan,
    cubesql_rows,
)
from embedadmin.semantic.errors import ModelError, ModelProblem, QueryError, QueryLimitError
from embedadmin.semantic.modeling.model import CompiledModel
from embedadmin.semantic.modeling.registry import ModelVersion, clear_models, load_model
from embedadmin.semantic.query.normalize import Limits, normalize_query
from embedadmin.semantic.query.normalized import NormalizedQuery
from embedadmin.semantic.results.meta import meta
from embedadmin.semantic.results.responses import dry_run_response, load_response, sql_response
from embedadmin.semantic.results.shaping import result_body
from embedadmin.semantic.sql.builder import CompiledQuery, ResultColumn, compile_query
from embedadmin.semantic.sql.planning import (
    BLENDING,
    COMPARE_DATE_RANGE,
    REGULAR,
    LoadPlan,
    QueryOutcome,
    compile_cached,
    parse_query_param,
    plan_queries,
    refresh_interval,
)

__all__ = [
    "BLENDING",
    "COMPARE_DATE_RANGE",
    "REGULAR",
    "CompiledModel",
    "CompiledQuery",
    "CubeSqlColumn",
    "CubeSqlPlan",
    "Limits",
    "LoadPlan",
    "ModelError",
    "ModelProblem",
    "ModelVersion",
    "NormalizedQuery",
    "QueryContext",
    "QueryError",
    "QueryLimitError",
    "QueryOutcome",
    "ResultColumn",
    "clear_models",
    "compile_cached",
    "compile_query",
    "cubesql_error_line",
    "cubesql_lines",
    "cubesql_plan",
    "cubesql_rows",
    "dry_run_response",
    "load_model",
    "load_response",
    "meta",
    "normalize_query",
    "parse_query_param",
    "plan_queries",
    "refresh_interval",
    "result_body",
    "sql_response",
]
