"""What every provider shares: the request a provider answers and the events it streams back.

A provider turns a question (with the thread's history and the tools it may call) into an async
stream of :data:`ProviderEvent`: thinking and content deltas, and model usage. It calls tools through
:class:`ProviderRequest.call_tool`, which the runtime implements: it logs the call in process, runs the
tool, logs the result and returns the JSON string, so a provider never writes frames itself. The
runtime cancels the provider's task on abort; ``cancel`` lets a provider also notice it cooperatively
(to close an upstream HTTP stream, say).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from embedadmin.semantic.cubesql.written import WRITTEN_OPERATORS


@dataclass(frozen=True)
class ThinkingDelta:
    text: str


@dataclass(frozen=True)
class ContentDelta:
    text: str


@dataclass(frozen=True)
class ModelUsage:
    """Tokens used by one model call (reported by LLM providers; the built-in reports none)."""

    model: str
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class Suggestions:
    """Questions offered instead of one the provider declined, each one it answers: shown as buttons that ask it."""

    questions: tuple[str, ...]


ProviderEvent = ThinkingDelta | ContentDelta | ModelUsage | Suggestions


class CancelToken:
    """Set when the run is aborted; lives on the run's event loop."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        await self._event.wait()


ToolCaller = Callable[[str, dict[str, Any]], Awaitable[str]]
# Looks a dimension's values up in the data for the caller: (cube, dimension, candidate phrases) -> the values equal
# to one of them without regard to case. Not a tool call: nothing of it is logged in the thread.
ValueLookup = Callable[[str, str, Sequence[str]], Awaitable[list[str]]]
# Whether every row a measure reads has a value of a time dimension, for the caller: (cube, measure, dimension,
# zero_is_none) -> bool (see ``tools.date_always_set``). Unlogged, as a value lookup.
DateCoverage = Callable[[str, str, str, bool], Awaitable[bool]]
# Searches the data model for the caller as ``serviceMeta`` does (the same function), unlogged: how an earlier
# question of the thread is read again against the cubes its own search found.
ModelSearch = Callable[[str], Awaitable[dict[str, Any]]]

# Cube's filter operators a dashboard may send as context (``context.dashboard.filters`` of a request): those the
# Core Data API writes in semantic SQL.
CONTEXT_FILTER_OPERATORS = WRITTEN_OPERATORS


@dataclass(frozen=True)
class ContextFilter:
    """A filter of the dashboard the user is looking at, as Cube writes it: ``member operator values``.

    A hint of what the user sees, never a grant: whatever a provider does with it, its queries still run with
    the viewer's own access policies."""

    member: str  # cube_or_view.member
    operator: str  # one of CONTEXT_FILTER_OPERATORS
    values: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ContextFilter:
        return cls(member=data["member"], operator=data["operator"], values=tuple(data.get("values") or ()))


@dataclass(frozen=True)
class ProviderRequest:
    """One turn: the user's question, the conversation before it, the tools, and what the user is looking at
    (a dashboard's ``publicId`` and its filters, when the question comes from a dashboard's chat panel)."""

    question: str
    history: Sequence[dict[str, Any]]
    tool_specs: Sequence[dict[str, Any]]
    call_tool: ToolCaller
    cancel: CancelToken
    timezone: str = "UTC"  # the viewer's, for dates in the question
    locale: str = "en-US"  # the viewer's (a checked BCP-47 tag), for the numbers and dates of the answer
    lookup_values: ValueLookup | None = None
    dates_always_set: DateCoverage | None = None
    search_model: ModelSearch | None = None
    dashboard: str = ""  # the publicId of the dashboard the question is asked from
    context_filters: Sequence[ContextFilter] = ()


class Provider(Protocol):
    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        """The answer to ``request`` as events; tool calls go through ``request.call_tool``."""


class ProviderUnavailable(Exception):
    """The agent's provider kind has no implementation on this server."""
