"""The tools an agent may call (spec 2.17): a registry of named, pluggable functions.

A tool is a plain synchronous function of a :class:`ToolContext` (who asks, on which deployment and
branch) and its JSON input, returning a JSON object. The runtime runs it off the event loop and turns
any exception into a result with ``error``, so a failing tool never ends the stream. The real
``serviceMeta`` and ``serviceSqlApi`` (over the semantic layer) replace the placeholders below by
registering under the same names.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from embedadmin.core.errors import ApiError
from embedadmin.semantic.context import QueryContext

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolContext:
    """What a tool knows of the call: the account, deployment and branch, and the caller's query context."""

    account_id: int
    deployment_id: int
    thread_id: int
    query_context: QueryContext
    branch_name: str = ""
    is_default_branch: bool = True


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
        "vegaSpec": _string_property("a Vega-Lite v5 spec without data, as a JSON string"),
    },
    "required": ["sqlQuery"],
}


def service_meta_placeholder(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    """Until the semantic search is wired: no members match."""
    return {"cubes": [], "searchQuery": str(arguments.get("searchQuery", ""))}


def service_sql_api_placeholder(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    """Until the semantic SQL runner is wired: a tool failure the agent can report."""
    return {"error": "serviceSqlApi is not available on this server yet"}


def default_tools() -> ToolRegistry:
    """The tools of spec 2.17 (``serviceMeta``, ``serviceSqlApi``)."""
    return ToolRegistry.of(
        [
            Tool(
                name="serviceMeta",
                description="Search the data model for cubes, views, measures and dimensions",
                parameters=SERVICE_META_PARAMETERS,
                function=service_meta_placeholder,
            ),
            Tool(
                name="serviceSqlApi",
                description="Run a semantic SQL query and return its rows",
                parameters=SERVICE_SQL_API_PARAMETERS,
                function=service_sql_api_placeholder,
            ),
        ]
    )
