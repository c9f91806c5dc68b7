"""Agent providers: what writes an answer, behind one interface.

A provider turns a question (with the thread's history and the tools it may call) into an async
stream of :data:`ProviderEvent`: thinking and content deltas, and model usage. It calls tools through
:class:`ProviderRequest.call_tool`, which the runtime implements: it logs the call in process, runs the
tool, logs the result and returns the JSON string, so a provider never writes frames itself. The
runtime cancels the provider's task on abort; ``cancel`` lets a provider also notice it cooperatively
(to close an upstream HTTP stream, say).

Providers by ``Agent.provider``: ``builtin`` (offline and deterministic) is here; ``openai`` (any
OpenAI-compatible chat-completions endpoint, with streamed tool calls) is in :mod:`.providers_openai`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from embedadmin.chat.models import Agent


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


ProviderEvent = ThinkingDelta | ContentDelta | ModelUsage


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


@dataclass(frozen=True)
class ProviderRequest:
    """One turn: the user's question, the conversation before it, and the tools."""

    question: str
    history: Sequence[dict[str, Any]]
    tool_specs: Sequence[dict[str, Any]]
    call_tool: ToolCaller
    cancel: CancelToken


class Provider(Protocol):
    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        """The answer to ``request`` as events; tool calls go through ``request.call_tool``."""


def _chunks(text: str, parts: int) -> list[str]:
    """``text`` cut at word boundaries into at most ``parts`` pieces that join back to it."""
    words = text.split(" ")
    size = max(1, -(-len(words) // parts))
    pieces = [" ".join(words[i : i + size]) for i in range(0, len(words), size)]
    return [piece + (" " if index < len(pieces) - 1 else "") for index, piece in enumerate(pieces)]


class BuiltinProvider:
    """The offline agent: searches the data model for the question's words and reports what it found.

    The full analyst (measures, dimensions, grain, filters from the model's names and synonyms, then
    ``serviceSqlApi``) replaces this answer-writing; the event shape stays the same.
    """

    answer_parts = 3

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        yield ThinkingDelta(f"Searching the data model for: {request.question}")
        meta = json.loads(await request.call_tool("serviceMeta", {"searchQuery": request.question}))
        if "error" in meta:
            answer = f"I could not search the data model: {meta['error']}"
        elif not meta.get("cubes"):
            answer = "I found nothing in the data model that matches your question."
        else:
            names = ", ".join(cube.get("title") or cube.get("name", "") for cube in meta["cubes"])
            answer = f"These parts of the data model match your question: {names}."
        for piece in _chunks(answer, self.answer_parts):
            yield ContentDelta(piece)


ProviderFactory = Callable[[Agent], Provider]


def _openai_provider(agent: Agent) -> Provider:
    from embedadmin.chat.providers_openai import openai_provider_for  # it builds on this module

    return openai_provider_for(agent)


PROVIDER_FACTORIES: dict[str, ProviderFactory] = {
    Agent.Provider.BUILTIN: lambda agent: BuiltinProvider(),
    Agent.Provider.OPENAI: _openai_provider,
}


class ProviderUnavailable(Exception):
    """The agent's provider kind has no implementation on this server."""


def provider_for(agent: Agent) -> Provider:
    factory = PROVIDER_FACTORIES.get(agent.provider)
    if factory is None:
        raise ProviderUnavailable(f"The {agent.get_provider_display()} provider is not available on this server")
    return factory(agent)
