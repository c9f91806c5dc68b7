"""The tools an agent may call (spec 2.17): a registry of named, pluggable functions.

A tool is a plain synchronous function of a :class:`ToolContext` (who asks, on which deployment and
branch) and its JSON input, returning a JSON object. The runtime runs it off the event loop and turns
any exception into a result with ``error``, so a failing tool never ends the stream. ``serviceMeta`` and
``serviceSqlApi`` work over the Core Data API's service layer with the chat user's query context, so the
deployment's access policies apply to what an agent sees and reads.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from embedadmin.accounts.models import Deployment
from embedadmin.chat.member_search import content_stems, local_name, relevance, view_root
from embedadmin.core.errors import ApiError
from embedadmin.semantic import cubesql_rows
from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.cubesql.written import sql_string
from embedadmin.semantic.serving.datasources import CancelScope
from embedadmin.semantic.serving.services import semantic_cubesql, semantic_meta

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolContext:
    """What a tool knows of the call: the account, deployment and branch, and the caller's query context."""

    account_id: int
    deployment_id: int
    query_context: QueryContext
    branch_name: str = ""
    is_default_branch: bool = True
    # The deployment once read (tools.py ``_deployment``): a run's tool calls and value lookups share it.
    found: dict[str, Deployment] = field(default_factory=dict, compare=False, repr=False)
    # The run's: cancelled when it is aborted, which stops the statement its queries are running in the data source.
    cancel: CancelScope | None = field(default=None, compare=False, repr=False)


ToolFunction = Callable[[ToolContext, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Tool:
    """A named tool with the JSON schema of its input (what an LLM provider advertises)."""

    name: str
    description: str
    parameters: dict[str, Any]
    function: ToolFunction


@dataclass
class ToolRegistry:
    """The tools available to a run, by name."""

    tools: dict[str, Tool] = field(default_factory=dict)

    @classmethod
    def of(cls, tools: Iterable[Tool]) -> ToolRegistry:
        return cls({tool.name: tool for tool in tools})

    def register(self, tool: Tool) -> None:
        self.tools[tool.name] = tool

    def specs(self) -> list[dict[str, Any]]:
        """Name, description and input schema of each tool, for providers that advertise them."""
        return [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in self.tools.values()]

    def call(self, context: ToolContext, name: str, arguments: dict[str, Any]) -> str:
        """Run a tool; the result is a JSON string, with ``error`` when the tool failed."""
        tool = self.tools.get(name)
        if tool is None:
            result: dict[str, Any] = {"error": f"Unknown tool {name!r}"}
        else:
            try:
                result = tool.function(context, arguments)
            except ApiError as exc:
                result = {"error": exc.message}
            except Exception as exc:
                logger.exception("Tool %s failed", name)
                result = {"error": f"{name} failed: {exc.__class__.__name__}"}
        return json.dumps(result, default=str)


def _string_property(description: str) -> dict[str, str]:
    return {"type": "string", "description": description}


SERVICE_META_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"searchQuery": _string_property("words to look for in the data model")},
    "required": ["searchQuery"],
}

SERVICE_SQL_API_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sqlQuery": _string_property("semantic SQL over the data model's cubes and views"),
        "queryTitle": _string_property("a short title of the query"),
        "description": _string_property("what the query answers"),
        "userRequest": _string_property("the user's request the query serves"),
        "memoryId": _string_property("an identifier to refer to this result later"),
        "timezone": _string_property("the IANA time zone dates and time buckets are read in (default UTC)"),
        "vegaSpec": _string_property("a Vega-Lite v5 spec without data, as a JSON string"),
    },
    "required": ["sqlQuery"],
}


class ToolFailure(ApiError):
    """A tool could not run (bad input, unknown branch, no data model): its result is ``{"error": message}``."""

    status = 400


def _deployment(context: ToolContext) -> Deployment:
    """The agent's deployment; a development branch other than the main one does not exist on this server."""
    if context.branch_name and not context.is_default_branch:
        raise ToolFailure(f"Branch {context.branch_name!r} is not found on deployment {context.deployment_id}")
    deployment = context.found.get("deployment")
    if deployment is None:
        deployment = Deployment.objects.filter(pk=context.deployment_id, account_id=context.account_id).first()
        if deployment is None:
            raise ToolFailure(f"Deployment {context.deployment_id} is not found")
        context.found["deployment"] = deployment
    return deployment


def _string_argument(arguments: dict[str, Any], name: str, *, required: bool = False) -> str:
    value = arguments.get(name, "")
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise ToolFailure(f"{name} must be a string")
    if required and not value.strip():
        raise ToolFailure(f"{name} is required")
    return value


def _member_result(member: dict[str, Any]) -> dict[str, Any]:
    """A member as ``serviceMeta`` shows it (spec 2.17), with what the model also says of it when it does: ``meta``
    (synonyms), ``format`` and ``currency``, a time dimension's custom ``granularities``, a view member's
    ``aliasMember`` (the cube member it shows)."""
    shown: dict[str, Any] = {
        "name": member["name"],
        "title": member.get("title") or member["name"],
        "description": member.get("description") or "",
        "type": member.get("type", ""),
    }
    if "aggType" in member:
        shown["aggType"] = member["aggType"]
    for extra in ("meta", "format", "currency", "granularities", "aliasMember"):
        if member.get(extra):
            shown[extra] = member[extra]
    return shown


def service_meta(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    """``serviceMeta``: the cubes and views this user may see that match ``searchQuery``, most relevant first.

    A cube matches when its own name, title or synonyms, or one of its members, do (a view also when the one
    cube its measures come from does); it is shown with all of its
    visible members, ranked (best first, then model order), so a caller also sees the dimensions it may filter
    or group by. With no match (or an empty search) every visible cube is shown in model order. Members the
    user's access policies deny never appear: the model comes from ``semantic_meta`` for the user's context.
    """
    search_query = _string_argument(arguments, "searchQuery")
    deployment = _deployment(context)
    if not deployment.model_dir:
        return {"cubes": [], "searchQuery": search_query}
    body = semantic_meta(deployment=deployment, ctx=context.query_context)
    wanted = content_stems(search_query)
    by_name = {cube["name"]: cube for cube in body["cubes"]}
    ranked: list[tuple[float, bool, int, dict[str, Any]]] = []
    everything: list[dict[str, Any]] = []
    for index, cube in enumerate(body["cubes"]):
        title = cube.get("title") or cube["name"]
        members = [*cube.get("measures", []), *cube.get("dimensions", [])]
        scores = [relevance(m, wanted, cube_title=title) for m in members]
        order = sorted(range(len(members)), key=lambda i: -scores[i])
        shown = {
            "name": cube["name"],
            "type": cube.get("type", "cube"),
            "title": title,
            **({"description": cube["description"]} if cube.get("description") else {}),
            **({"meta": cube["meta"]} if cube.get("meta") else {}),
            "members": [_member_result(members[i]) for i in order],
        }
        everything.append({**shown, "members": [_member_result(m) for m in members]})
        root = view_root(str(m.get("aliasMember") or "") for m in cube.get("measures", []))
        roots = [by_name[root]] if cube.get("type") == "view" and root is not None and root in by_name else []
        named = max(relevance(named_by, wanted) for named_by in (cube, *roots))
        score = max(scores, default=0.0) + named
        if score > 0:
            # Views first among equals: they are what the model offers for querying.
            ranked.append((-score, shown["type"] != "view", index, shown))
    cubes = [shown for *_, shown in sorted(ranked, key=lambda r: r[:3])] if ranked else everything
    return {"cubes": cubes, "searchQuery": search_query}


TOOL_ROW_LIMIT = 100
VEGA_LITE_SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
NUMERIC_TYPES = frozenset({"Int64", "Int32", "Double", "Decimal", "Float", "Number"})


def _without_data(spec: str) -> str:
    """A caller's Vega-Lite spec with any inline data removed (data always comes from ``data``)."""
    try:
        parsed = json.loads(spec)
    except ValueError:
        raise ToolFailure("vegaSpec must be a JSON object") from None
    if not isinstance(parsed, dict):
        raise ToolFailure("vegaSpec must be a JSON object")
    parsed.pop("data", None)
    parsed.pop("datasets", None)
    return json.dumps(parsed)


def chart_spec(schema: list[dict[str, Any]], title: str) -> str:
    """A Vega-Lite v5 spec (JSON, no data) for a result: a line for one time column and one number, a bar for
    one category and one number; ``""`` when no chart fits."""
    if len(schema) != 2 or schema[1]["column_type"] not in NUMERIC_TYPES:
        return ""
    x, y = schema[0], schema[1]
    if x["column_type"] == "Timestamp":
        mark: dict[str, Any] = {"type": "line", "point": True}
        x_encoding: dict[str, Any] = {"field": x["name"], "type": "temporal"}
    elif x["column_type"] in ("String", "Boolean"):
        mark = {"type": "bar"}
        x_encoding = {"field": x["name"], "type": "nominal", "sort": "-y"}
    else:
        return ""
    spec = {
        "$schema": VEGA_LITE_SCHEMA,
        "title": title,
        "mark": mark,
        "encoding": {"x": x_encoding, "y": {"field": y["name"], "type": "quantitative"}},
    }
    return json.dumps(spec)


def service_sql_api(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    """``serviceSqlApi``: run semantic SQL through the Core Data API's service layer for the user's context (its
    access policies and row filters apply); the first 100 rows, the total count and a chart spec (spec 2.17)."""
    sql = _string_argument(arguments, "sqlQuery", required=True)
    query_title = _string_argument(arguments, "queryTitle")
    given_spec = _string_argument(arguments, "vegaSpec")
    timezone = _string_argument(arguments, "timezone") or "UTC"
    result = semantic_cubesql(
        deployment=_deployment(context), ctx=context.query_context, sql=sql, timezone=timezone, cancel=context.cancel
    )
    rows = list(cubesql_rows(result.plan, result.rows))
    schema = [{"name": c.name, "column_type": c.column_type} for c in result.plan.columns]
    return {
        "sqlQuery": sql,
        "queryTitle": query_title,
        "description": _string_argument(arguments, "description"),
        "userRequest": _string_argument(arguments, "userRequest"),
        "schema": schema,
        "data": rows[:TOOL_ROW_LIMIT],
        "totalRows": len(rows),
        "uuid": str(uuid.uuid4()),
        "vegaSpec": _without_data(given_spec) if given_spec else chart_spec(schema, query_title),
    }


MAX_LOOKED_UP = 200


def dimension_values(context: ToolContext, cube: str, dimension: str, candidates: Sequence[str]) -> list[str]:
    """The values of ``dimension`` (``cube.member``) equal to one of ``candidates`` without regard to case, as the
    caller may see them (through the Core Data API with the caller's access policies). A dimension the caller may
    not read, or a model error, finds nothing."""
    wanted = {c.lower() for c in candidates if c and "%" not in c and "_" not in c and "\\" not in c}
    if not wanted:
        return []
    column = local_name(dimension)
    patterns = " OR ".join(f"{column} ILIKE {sql_string(f'%{value}%')}" for value in sorted(wanted))
    sql = f"SELECT {column} FROM {cube} WHERE {patterns} GROUP BY 1 LIMIT {MAX_LOOKED_UP}"  # noqa: S608 (semantic SQL)
    try:
        result = semantic_cubesql(
            deployment=_deployment(context), ctx=context.query_context, sql=sql, cancel=context.cancel
        )
    except ApiError:
        return []
    rows = cubesql_rows(result.plan, result.rows)
    return [row[0] for row in rows if isinstance(row[0], str) and row[0].lower() in wanted]


def default_tools() -> ToolRegistry:
    """The tools of spec 2.17 (``serviceMeta``, ``serviceSqlApi``)."""
    return ToolRegistry.of(
        [
            Tool(
                name="serviceMeta",
                description="Search the data model for cubes, views, measures and dimensions",
                parameters=SERVICE_META_PARAMETERS,
                function=service_meta,
            ),
            Tool(
                name="serviceSqlApi",
                description="Run a semantic SQL query and return its rows",
                parameters=SERVICE_SQL_API_PARAMETERS,
                function=service_sql_api,
            ),
        ]
    )
