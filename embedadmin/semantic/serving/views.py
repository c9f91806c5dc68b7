"""The Core Data API over HTTP: ``{base_path}/v1/meta``, ``/load``, ``/subscribe``, ``/sql``, ``/dry-run``,
``/cubesql``.

Each view parses Cube's parameters (GET query string or POST JSON body), routes the request to its deployment,
verifies its token (:mod:`embedadmin.semantic.serving.routing`) and calls one function of
:mod:`embedadmin.semantic.serving.services`. Every answer is JSON: the Cube body, or ``{"error": "..."}`` with Cube's
status (400 bad query or model, 403 token, 404 unknown deployment, 500 data source or internal fault, and
200 ``{"error": "Continue wait"}`` for a query still running). Every answer, errors and CORS preflights
included, carries ``Access-Control-Allow-Origin: *``: the token is a header, never a cookie, so any page may
call the API, as a stock Cube install allows.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from embedadmin.core.edge.bodies import json_object_body
from embedadmin.core.edge.cors import preflight, with_cors
from embedadmin.core.edge.declarations import declare
from embedadmin.core.edge.openapi import ANY_OBJECT, ERROR, error_responses, json_content
from embedadmin.core.errors import ApiError, BadRequest, client_error, error_body
from embedadmin.core.fields import contains_nul
from embedadmin.semantic.cubesql.plan import cubesql_lines
from embedadmin.semantic.serving import services as service
from embedadmin.semantic.serving.cache import ContinueWait
from embedadmin.semantic.serving.routing import CoreApiCaller, core_api_caller

logger = logging.getLogger(__name__)

CONTINUE_WAIT = {"error": "Continue wait"}

# A handler returns the body: an object to encode, or JSON already encoded.
Handler = Callable[[HttpRequest, CoreApiCaller], Any]


def _json(body: Any, status: int = 200) -> HttpResponse:
    content = body if isinstance(body, bytes) else service.json_bytes(body)
    return HttpResponse(content, status=status, content_type="application/json; charset=utf-8")


def _error_response(exc: Exception) -> HttpResponse:
    """The JSON error of a failed request (logged when it is not the client's fault)."""
    known = client_error(exc)
    if known is None:
        logger.exception("Core Data API request failed", exc_info=exc)
        known = 500, "Internal server error"
    status, message = known
    return _json(service.json_bytes(error_body(message)), status)


# --- the OpenAPI operations (merged into GET /api/v1/spec; docs/core-data-api.md) --------------------------------

QUERY_BODY = {
    "type": "object",
    "properties": {
        "query": {
            "description": "A Cube query (object), an array of them, or one as a JSON string",
            "oneOf": [{"type": "object"}, {"type": "array", "items": {"type": "object"}}, {"type": "string"}],
        },
        "queryType": {"type": "string", "enum": ["multi"]},
        "cache": {"type": "string"},
    },
}
QUERY_PARAMS = [
    {"name": "query", "in": "query", "required": False, "schema": {"type": "string"}, "description": "JSON query"},
    {"name": "queryType", "in": "query", "required": False, "schema": {"type": "string"}},
    {"name": "cache", "in": "query", "required": False, "schema": {"type": "string"}},
]
META_PARAMS = [
    {"name": "extended", "in": "query", "required": False, "schema": {"type": "string"}},
    {"name": "onlyViews", "in": "query", "required": False, "schema": {"type": "string"}},
]
CUBESQL_BODY = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
JSON_LINES = {
    "description": 'JSON lines: a {"schema"} line, then {"data"} lines',
    "content": {"application/json": {"schema": {"type": "string"}}},
}
READ_ONLY = "a query: it reads and changes nothing"


def _operation(
    summary: str, *, params: list[dict[str, Any]] | None = None, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    responses: dict[str, Any] = {"200": {"description": summary, "content": json_content(ANY_OBJECT)}}
    responses.update(error_responses())
    responses["500"] = {"description": "The data source failed (its safe message)", "content": json_content(ERROR)}
    operation: dict[str, Any] = {
        "tags": ["Core Data API"],
        "summary": summary,
        "security": [{"CoreJWT": []}],
        "responses": responses,
    }
    if params:
        operation["parameters"] = params
    if body is not None:
        operation["requestBody"] = {"required": "required" in body, "content": json_content(body)}
    return operation


def _query_operations(summary: str) -> dict[str, dict[str, Any]]:
    """A query endpoint's GET (the query string) and POST (the JSON body)."""
    return {"GET": _operation(summary, params=QUERY_PARAMS), "POST": _operation(summary, body=QUERY_BODY)}


# --- the views -------------------------------------------------------------------------------------------------


def core_api(
    operations: dict[str, dict[str, Any]], *, scope: str = "data"
) -> Callable[[Handler], Callable[..., HttpResponse]]:
    """Make ``handler(request, caller) -> body`` a Core Data API view answering the methods of ``operations`` (their
    OpenAPI operations), in API ``scope`` (a token restricted to other scopes is refused: 403).

    The view takes the optional ``deployment_id`` path argument (``/d/{id}{base_path}/...``).
    """
    methods = tuple(operations)
    declaration = declare(operations=operations, audit_exempt={m: READ_ONLY for m in methods if m != "GET"})

    def decorate(handler: Handler) -> Callable[..., HttpResponse]:
        @declaration
        @csrf_exempt
        @wraps(handler)
        def view(request: HttpRequest, deployment_id: int | None = None) -> HttpResponse:
            if request.method == "OPTIONS":
                return preflight(request, methods)
            if request.method not in methods:
                response = _json(error_body("Method not allowed"), 405)
                response["Allow"] = ", ".join((*methods, "OPTIONS"))
                return with_cors(response)
            try:
                caller = core_api_caller(deployment_id=deployment_id, headers=request.headers)
                caller.require_scope(scope)
                response = _json(handler(request, caller))
            except ContinueWait:
                response = _json(CONTINUE_WAIT)
            except Exception as exc:  # every failure becomes {"error": ...}: see _error_response
                response = _error_response(exc)
            return with_cors(response)

        return view

    return decorate


def request_params(request: HttpRequest) -> dict[str, Any]:
    """Cube's parameters of a query endpoint: the query string of a GET, the JSON object body of a POST (none for an
    empty body); 400 for any other body, or a string holding a NUL character. Names Cube does not know are ignored,
    as Cube ignores them (its clients may send more than a query)."""
    if request.method != "GET":
        return json_object_body(request, fields=None, empty={})
    params: dict[str, Any] = request.GET.dict()
    if contains_nul(params):
        raise BadRequest("The request must not contain NUL characters")
    return params


def _string_param(params: dict[str, Any], name: str) -> str | None:
    value = params.get(name)
    if value is not None and not isinstance(value, str):
        raise BadRequest(f'"{name}" must be a string')
    return value


@core_api({"GET": _operation("cubes and views the caller may see", params=META_PARAMS)}, scope="meta")
def meta_view(request: HttpRequest, caller: CoreApiCaller) -> Any:
    """``GET /v1/meta`` (``?extended``, ``?onlyViews=true``)."""
    return service.semantic_meta_json(
        deployment=caller.deployment,
        ctx=caller.ctx,
        extended="extended" in request.GET,
        only_views=request.GET.get("onlyViews") == "true",
    )


@core_api(_query_operations("query results (Cube /v1/load)"))
def load_view(request: HttpRequest, caller: CoreApiCaller) -> Any:
    """``GET/POST /v1/load`` and ``/v1/subscribe``: ``query``, ``queryType`` and ``cache``."""
    raw = request.META.get("QUERY_STRING", "").encode("latin-1") if request.method == "GET" else request.body
    return service.semantic_load_json(
        deployment=caller.deployment,
        ctx=caller.ctx,
        method=request.method or "GET",
        raw=raw,
        params=functools.cache(lambda: _load_params(request)),
    )


def _load_params(request: HttpRequest) -> dict[str, Any]:
    params = request_params(request)
    return {
        "query": params.get("query"),
        "queryType": _string_param(params, "queryType"),
        "cache": _string_param(params, "cache"),
    }


@core_api(_query_operations("the SQL a query compiles to"))
def sql_view(request: HttpRequest, caller: CoreApiCaller) -> Any:
    """``GET/POST /v1/sql``: the SQL of a REST query (``format=rest``, the default)."""
    params = request_params(request)
    query_format = _string_param(params, "format") or "rest"
    if query_format != "rest":
        raise ApiError(f'Unsupported format "{query_format}": only "rest" queries are compiled here')
    return service.semantic_sql(deployment=caller.deployment, ctx=caller.ctx, query=params.get("query"))


@core_api(_query_operations("the normalized query, not run"))
def dry_run_view(request: HttpRequest, caller: CoreApiCaller) -> Any:
    """``GET/POST /v1/dry-run``."""
    params = request_params(request)
    return service.semantic_dry_run(deployment=caller.deployment, ctx=caller.ctx, query=params.get("query"))


_CUBESQL = _operation("semantic SQL, answered in JSON lines", body=CUBESQL_BODY)
_CUBESQL["responses"]["200"] = JSON_LINES


@core_api({"POST": _CUBESQL})
def cubesql_view(request: HttpRequest, caller: CoreApiCaller) -> Any:
    """``POST /v1/cubesql``: ``{"query": "<semantic SQL>", "timezone"?, "cache"?, "throwContinueWait"?}``,
    answered in JSON lines (a schema line, then data lines)."""
    params = request_params(request)
    sql = params.get("query")
    if not isinstance(sql, str) or not sql.strip():
        raise BadRequest("Query param is required")
    throw = params.get("throwContinueWait", False)
    if not isinstance(throw, bool):
        raise BadRequest('"throwContinueWait" must be a boolean')
    result = service.semantic_cubesql(
        deployment=caller.deployment,
        ctx=caller.ctx,
        sql=sql,
        timezone=_string_param(params, "timezone") or "UTC",
        cache=_string_param(params, "cache"),
        throw_continue_wait=throw,
    )
    lines = cubesql_lines(result.plan, result.rows, last_refresh_time=result.last_refresh_time)
    return "".join(lines).encode()


@declare(operations={})
@csrf_exempt
def not_found_view(request: HttpRequest, **_: Any) -> HttpResponse:
    """Any other path under the Core Data API prefixes: a JSON 404 (with CORS, so a browser can read it)."""
    return with_cors(_json(error_body("Not found"), 404))
