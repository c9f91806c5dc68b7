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
import re
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from embedadmin.accounts.models import Deployment
from embedadmin.chat.member_search import content_stems, local_name, relevance, value_key, view_root
from embedadmin.core.errors import ApiError
from embedadmin.semantic import cubesql_rows
from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.cubesql.plan import CubeSqlColumn
from embedadmin.semantic.cubesql.written import sql_string
from embedadmin.semantic.modeling.reading_titles import READING_TITLE
from embedadmin.semantic.modeling.titles import titleize
from embedadmin.semantic.serving.services import semantic_cubesql, semantic_meta
from embedadmin.semantic.sources.base import CancelScope

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
    """A member as ``serviceMeta`` shows it (spec 2.17), with the title people read it by (``shortTitle``: its
    ``readingTitle``, ``semantic/modeling/reading_titles.py``) and what the model also says of it when it does:
    ``meta`` (synonyms), ``format`` and ``currency``, a time dimension's custom ``granularities``, a view member's
    ``aliasMember`` (the cube member it shows)."""
    shown: dict[str, Any] = {
        "name": member["name"],
        "title": member.get("title") or member["name"],
        "shortTitle": member[READING_TITLE],
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
    body = semantic_meta(deployment=deployment, ctx=context.query_context, readable=True)
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
VALUE_TYPES = {"Timestamp": "time", "Boolean": "boolean", **dict.fromkeys(NUMERIC_TYPES, "number")}
# Vega-Lite's time unit of a time bucket, so that a chart's time axis reads its grain ("Jan 2024", "Q1 2024") wherever
# the spec is drawn. Weeks have none (Cube's start on Monday, Vega-Lite's on Sunday), nor custom granularities.
GRAIN_TIME_UNITS = {
    "year": "year",
    "quarter": "yearquarter",
    "month": "yearmonth",
    "day": "yearmonthdate",
    "hour": "yearmonthdatehours",
}
POSITION_CHANNELS = ("x", "y", "theta", "color")


def _without_data(spec: str) -> dict[str, Any]:
    """A caller's Vega-Lite spec with any inline data removed (data always comes from ``data``)."""
    try:
        parsed = json.loads(spec)
    except ValueError:
        raise ToolFailure("vegaSpec must be a JSON object") from None
    if not isinstance(parsed, dict):
        raise ToolFailure("vegaSpec must be a JSON object")
    parsed.pop("data", None)
    parsed.pop("datasets", None)
    return parsed


def column_annotation(columns: Sequence[CubeSqlColumn], meta: dict[str, Any]) -> list[dict[str, Any]]:
    """What each column of a result is, in the order of its ``schema``: ``title`` (its member's title as people read
    it, its ``readingTitle``; a time bucket's with its grain, "Ordered at (month)"), ``member``, ``type`` (number,
    string, time, boolean) and the member's ``format``, ``currency`` and ``granularity`` when it has them: what a
    chart's axes and a table's headers show, and what the embed page formats values by (common.js
    ``Formatter.value``). ``meta`` is ``/v1/meta`` as the caller sees it, composed for display (``readable``). A
    column computed after the query (a share, a difference) is titled from its name."""
    members: dict[str, dict[str, Any]] = {}
    for cube in meta.get("cubes", []):
        members.update((m["name"], m) for m in (*cube.get("measures", []), *cube.get("dimensions", [])))
    return [_column_annotation(column, members) for column in columns]


def _column_annotation(column: CubeSqlColumn, members: dict[str, dict[str, Any]]) -> dict[str, Any]:
    value_type = VALUE_TYPES.get(column.column_type, "string")
    if not column.member:
        return {"title": titleize(column.name), "type": value_type}
    cube, name, *grain = column.member.split(".")
    member = f"{cube}.{name}"
    described = members.get(member, {})  # a member meta does not list (public: false) is titled from its name
    title = described.get(READING_TITLE) or titleize(name)
    shown: dict[str, Any] = {"title": title, "member": member, "type": described.get("type") or value_type}
    if grain:
        custom = {g.get("name"): g.get("title") for g in described.get("granularities") or [] if isinstance(g, dict)}
        shown.update(type="time", granularity=grain[0], title=f"{title} ({custom.get(grain[0]) or grain[0]})")
    elif shown["type"] != "time":
        shown.update({key: described[key] for key in ("format", "currency") if described.get(key)})
    return shown


def _vega_field(name: str) -> str:
    """A column name as a Vega-Lite field: dots and brackets escaped (they would read as a nested path)."""
    return re.sub(r"([.\[\]])", r"\\\1", name)


def titled_spec(spec: dict[str, Any], schema: list[dict[str, Any]], annotation: list[dict[str, Any]]) -> dict[str, Any]:
    """``spec`` with each encoding of a result's column naming it as a Vega-Lite field and titled with the column's
    title (unless the spec titles it), and, when the spec has no tooltip, a tooltip of its channels that show a column,
    with those titles: never a SQL expression (``measure(sales.revenue)``) on an axis or in a tooltip."""
    names = {column["name"]: index for index, column in enumerate(schema)}
    names.update({_vega_field(column["name"]): index for index, column in enumerate(schema)})
    encoding = spec.get("encoding")
    if not isinstance(encoding, dict):
        return spec
    for definitions in encoding.values():
        for definition in definitions if isinstance(definitions, list) else [definitions]:
            field = definition.get("field") if isinstance(definition, dict) else None
            if not isinstance(field, str) or field not in names:
                continue
            index = names[field]
            definition["field"] = _vega_field(schema[index]["name"])
            definition.setdefault("title", annotation[index]["title"])
    mark = spec.get("mark")
    if "tooltip" not in encoding and not (isinstance(mark, dict) and "tooltip" in mark):
        channels = [d for c, d in encoding.items() if c in POSITION_CHANNELS and isinstance(d, dict)]
        shown = [d for d in channels if d.get("field") in names]
        keys = ("field", "type", "title", "timeUnit", "aggregate")
        if shown:
            encoding["tooltip"] = [{k: d[k] for k in keys if k in d} for d in shown]
    return spec


def chart_spec(schema: list[dict[str, Any]], annotation: list[dict[str, Any]], title: str) -> str:
    """A Vega-Lite v5 spec (JSON, no data) for a result: a line for one time column and one number, bars across
    (biggest first, each category's name read across) for one category and one number, titled with the columns'
    titles; ``""`` when no chart fits."""
    if len(schema) != 2 or schema[1]["column_type"] not in NUMERIC_TYPES:
        return ""
    key, value = schema[0], schema[1]
    measure = {"field": value["name"], "type": "quantitative"}
    if key["column_type"] == "Timestamp":
        mark: dict[str, Any] = {"type": "line", "point": True}
        time: dict[str, Any] = {"field": key["name"], "type": "temporal"}
        unit = GRAIN_TIME_UNITS.get(annotation[0].get("granularity", ""))
        if unit:
            time["timeUnit"] = unit
        encoding = {"x": time, "y": measure}
    elif key["column_type"] in ("String", "Boolean"):
        mark = {"type": "bar"}
        encoding = {"y": {"field": key["name"], "type": "nominal", "sort": "-x"}, "x": measure}
    else:
        return ""
    spec = {"$schema": VEGA_LITE_SCHEMA, "title": title, "mark": mark, "encoding": encoding}
    return json.dumps(titled_spec(spec, schema, annotation))


def service_sql_api(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    """``serviceSqlApi``: run semantic SQL through the Core Data API's service layer for the user's context (its
    access policies and row filters apply); the first 100 rows, the total count, what each column is
    (``annotation``) and a chart spec (spec 2.17)."""
    sql = _string_argument(arguments, "sqlQuery", required=True)
    query_title = _string_argument(arguments, "queryTitle")
    given_spec = _string_argument(arguments, "vegaSpec")
    timezone = _string_argument(arguments, "timezone") or "UTC"
    deployment = _deployment(context)
    result = semantic_cubesql(
        deployment=deployment, ctx=context.query_context, sql=sql, timezone=timezone, cancel=context.cancel
    )
    rows = list(cubesql_rows(result.plan, result.rows))
    schema = [{"name": c.name, "column_type": c.column_type} for c in result.plan.columns]
    readable = semantic_meta(deployment=deployment, ctx=context.query_context, readable=True)
    annotation = column_annotation(result.plan.columns, readable)
    if given_spec:
        spec = json.dumps(titled_spec(_without_data(given_spec), schema, annotation))
    else:
        spec = chart_spec(schema, annotation, query_title)
    return {
        "sqlQuery": sql,
        "queryTitle": query_title,
        "description": _string_argument(arguments, "description"),
        "userRequest": _string_argument(arguments, "userRequest"),
        "schema": schema,
        "annotation": annotation,
        "data": rows[:TOOL_ROW_LIMIT],
        "totalRows": len(rows),
        "uuid": str(uuid.uuid4()),
        "vegaSpec": spec,
    }


MAX_LOOKED_UP = 200


def _viewer_rows(context: ToolContext, sql: str) -> list[Any] | None:
    """The rows of a semantic SQL query run for the caller (with the caller's access policies); None when the
    query is refused (a member the caller may not read, a model error)."""
    try:
        result = semantic_cubesql(
            deployment=_deployment(context), ctx=context.query_context, sql=sql, cancel=context.cancel
        )
    except ApiError:
        return None
    return list(cubesql_rows(result.plan, result.rows))


def dimension_values(context: ToolContext, cube: str, dimension: str, candidates: Sequence[str]) -> list[str]:
    """The values of ``dimension`` (``cube.member``) equal to one of ``candidates`` without regard to case, as the
    caller may see them (through the Core Data API with the caller's access policies). A dimension the caller may
    not read, or a model error, finds nothing."""
    wanted = {c.lower() for c in candidates if c and "%" not in c and "_" not in c and "\\" not in c and value_key(c)}
    if not wanted:
        return []
    column = local_name(dimension)
    # Each word of a candidate: "starter monthly" finds "starter_monthly" and "Starter-Monthly" too
    patterns = " OR ".join(
        "(" + " AND ".join(f"{column} ILIKE {sql_string(f'%{word}%')}" for word in value_key(value).split()) + ")"
        for value in sorted(wanted)
    )
    sql = f"SELECT {column} FROM {cube} WHERE {patterns} GROUP BY 1 LIMIT {MAX_LOOKED_UP}"  # noqa: S608 (semantic SQL)
    rows = _viewer_rows(context, sql)
    if rows is None:
        return []
    keys = {value_key(c) for c in wanted}
    return [row[0] for row in rows if isinstance(row[0], str) and value_key(row[0]) in keys]


def date_always_set(context: ToolContext, cube: str, measure: str, dimension: str, *, zero_is_none: bool) -> bool:
    """Whether every row ``measure`` (``cube.member``) reads has a value of the time ``dimension``, as the caller
    may see them: the measure over the rows where the date is empty is no value (or, for ``zero_is_none``, a count
    or sum, zero). A period on such a date leaves none of the measure's rows out by having no date. A member the
    caller may not read, or a model error, is not known to be set: False."""
    sql = (
        f"SELECT MEASURE({local_name(measure)}) FROM {cube} "  # noqa: S608 (semantic SQL of the model's own names)
        f"WHERE {local_name(dimension)} IS NULL"
    )
    rows = _viewer_rows(context, sql)
    if rows is None:
        return False
    values = [row[0] for row in rows]
    if not values or values == [None]:
        return True
    if zero_is_none and len(values) == 1:
        try:
            return float(values[0]) == 0
        except (TypeError, ValueError):
            return False
    return False


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
