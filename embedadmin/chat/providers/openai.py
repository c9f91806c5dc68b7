"""The OpenAI-compatible provider: any chat-completions endpoint with tool calling, streamed.

Each model call is ``POST {base_url}/chat/completions`` with ``stream: true``; the response is read as
server-sent events while it arrives, and every ``choices[0].delta`` is passed on at once: ``content``
as answer text, ``reasoning_content`` (or ``reasoning``) as thinking. Tool calls arrive in fragments
keyed by ``index`` (the id and name first, the JSON arguments in pieces); once the call's stream ends
they are run through :class:`~embedadmin.chat.providers.base.ProviderRequest.call_tool`, their JSON-string
results go back as ``role: "tool"`` messages, and the model is called again, until it answers without
tools. The last call allowed by ``max_tool_rounds`` is made with ``tool_choice: "none"``.

Failures of the model server (an HTTP error, a timeout, a broken or malformed stream) raise
:class:`ModelProviderError`, whose message the run's ``__error__`` line shows; an abort cancels the
provider's task, which closes the HTTP stream.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import httpx

from embedadmin.chat.models import Agent
from embedadmin.chat.providers.base import (
    ContentDelta,
    ContextFilter,
    ModelUsage,
    ProviderEvent,
    ProviderRequest,
    ThinkingDelta,
)
from embedadmin.core.errors import ApiError

logger = logging.getLogger(__name__)

DEFAULT_MAX_TOOL_ROUNDS = 8
CONNECT_TIMEOUT_SECONDS = 10.0
# The longest silence between two pieces of a streamed answer (a model may think for a while).
READ_TIMEOUT_SECONDS = 120.0

SYSTEM_PROMPT = """\
You are a data analyst embedded in an analytics product. You answer the user's questions about their \
business data, using only the data you can query through your tools, and never invent numbers.

The data is described by a semantic data model: cubes and views with measures (aggregations such as \
counts, sums and averages) and dimensions (attributes and times to group and filter by).
- Call serviceMeta with a few words of the question to find the cubes, views, measures and dimensions \
that match; the result lists each member's name, title, shortTitle, description and type.
- Call serviceSqlApi with a semantic SQL query over those cubes and views: select dimensions and \
MEASURE(measure_name), GROUP BY the dimensions, filter with WHERE, order and LIMIT for a top N, and use \
DATE_TRUNC('month', time_dimension) for a time grain. Give the query a short queryTitle, a description \
and the userRequest it answers; add a Vega-Lite v5 vegaSpec (as a JSON string, without data) when a \
chart helps. The result has the column schema, an annotation of each column (its title, member, type and \
format), up to 100 rows in data, and totalRows.
- If a tool result has an error, fix the query and try again, or explain what went wrong.

Answer briefly and state the numbers you found. Name members as people read them (their shortTitle, \
a column's annotation title), never by their name or a SQL expression. Write in Markdown: a "- " list \
for a few values of one measure; for several measures or groups a table whose header row is the \
columns' annotation titles (the page draws it from the result's rows, formatted for the reader). When \
the data model cannot answer the question, say so and say what it can answer about."""


def dashboard_note(dashboard: str, filters: Sequence[ContextFilter]) -> str:
    """The system note that tells the model which dashboard the user is looking at and with which filters (each as
    Cube writes it: member, operator, values in JSON), to apply to its queries."""
    if not filters:
        return (
            f"The user is looking at dashboard {dashboard or '(unnamed)'} with no filters applied; "
            "answer over all the data they may see unless they ask otherwise."
        )
    listed = "; ".join(
        f"{f.member} {f.operator}" + (f" {json.dumps(list(f.values))}" if f.values else "") for f in filters
    )
    return (
        f"The user is looking at dashboard {dashboard or '(unnamed)'} with these filters applied: {listed}. "
        "Apply them to every query you run (in WHERE, or HAVING for a measure; date ranges in the user's time zone) "
        "unless the user asks otherwise, and say which you applied."
    )


def reader_note(locale: str, timezone: str) -> str:
    """The system note that tells the model how the user reads figures and dates (their locale, a checked language
    tag) and which time zone their dates are in (a known IANA zone), as the built-in analyst writes them."""
    return (
        f"The user reads numbers and dates as the {locale} locale writes them: write the figures and dates of your "
        f"answer that way. Their time zone is {timezone}: read dates in the question (today, last month) in it."
    )


class ModelProviderError(ApiError):
    """The model server failed to answer; ``message`` is what the user reads on the stream's error line."""

    status = 502


@dataclass
class StreamedToolCall:
    """A tool call being assembled from its streamed fragments."""

    id: str
    name: str = ""
    arguments: str = ""

    def as_message_part(self) -> dict[str, Any]:
        """The call as an entry of an assistant message's ``tool_calls``."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass
class Completion:
    """One streamed chat completion, assembled chunk by chunk."""

    content: list[str] = field(default_factory=list)
    tool_calls: dict[int, StreamedToolCall] = field(default_factory=dict)
    finish_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    done: bool = False

    def absorb(self, chunk: dict[str, Any]) -> list[ProviderEvent]:
        """Fold one ``chat.completion.chunk`` in; return the deltas to pass on now."""
        if isinstance(chunk.get("error"), dict | str):
            raise ModelProviderError(f"The model provider reported an error: {_error_text(chunk['error'])}")
        usage = chunk.get("usage")
        if isinstance(usage, dict):  # the last chunk with include_usage; some servers repeat running totals
            self.input_tokens = int(usage.get("prompt_tokens") or 0)
            self.output_tokens = int(usage.get("completion_tokens") or 0)
        choices = chunk.get("choices") or []  # [] (or null) on the usage-only chunk
        if not choices:
            return []
        choice = choices[0]
        self.finish_reason = choice.get("finish_reason") or self.finish_reason
        delta = choice.get("delta") or {}
        deltas: list[ProviderEvent] = []
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            deltas.append(ThinkingDelta(reasoning))
        content = delta.get("content")
        if isinstance(content, str) and content:
            self.content.append(content)
            deltas.append(ContentDelta(content))
        for position, fragment in enumerate(delta.get("tool_calls") or []):
            self._absorb_tool_call(fragment, position)
        return deltas

    def _absorb_tool_call(self, fragment: dict[str, Any], position: int) -> None:
        index = fragment.get("index", position)
        call = self.tool_calls.setdefault(index, StreamedToolCall(id=f"call_{index}"))
        if fragment.get("id"):
            call.id = fragment["id"]
        function = fragment.get("function") or {}
        if function.get("name") and not call.name:  # sent once; some servers repeat it in every fragment
            call.name = function["name"]
        call.arguments += function.get("arguments") or ""

    def calls(self) -> list[StreamedToolCall]:
        return [self.tool_calls[index] for index in sorted(self.tool_calls)]

    def assistant_message(self) -> dict[str, Any]:
        """The model's turn as it goes back into the conversation."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) or None}
        if self.tool_calls:
            message["tool_calls"] = [call.as_message_part() for call in self.calls()]
        return message


async def sse_data(lines: AsyncIterator[str]) -> AsyncGenerator[str, None]:
    """The ``data`` of each server-sent event in ``lines`` (several ``data:`` lines join with a newline);
    comments (``: keep-alive``) and the other fields are skipped."""
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value.removeprefix(" "))
    if data:
        yield "\n".join(data)


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error.get("code") or "unknown error")
    return str(error)


def _status_error(status: int) -> ModelProviderError:
    """What the user reads when the model server answers with an HTTP error."""
    if status in (401, 403):
        return ModelProviderError(f"The model provider rejected the agent's API key (HTTP {status})")
    if status == 404:
        return ModelProviderError("The model provider does not know the agent's model or endpoint (HTTP 404)")
    if status == 429:
        return ModelProviderError("The model provider is rate limiting the agent (HTTP 429); try again shortly")
    return ModelProviderError(f"The model provider failed (HTTP {status})")


def tool_definition(spec: dict[str, Any]) -> dict[str, Any]:
    """A tool of the registry (:meth:`ToolRegistry.specs`) as a chat-completions ``tools`` entry."""
    return {
        "type": "function",
        "function": {"name": spec["name"], "description": spec["description"], "parameters": spec["parameters"]},
    }


def history_messages(history: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The thread's consolidated messages (spec 2.17) as chat-completions messages.

    Each earlier turn becomes the user's message, the tool calls that finished (one assistant message
    with their ``tool_calls``, then one ``tool`` message per result) and the answer's text. Thinking is
    not sent back, and calls without a result (an aborted turn) are left out, since every call the model
    sees must have its result.
    """
    messages: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    answers: list[str] = []

    def close_turn() -> None:
        if calls:
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        StreamedToolCall(
                            id=call["id"], name=call["toolCall"]["name"], arguments=call["toolCall"]["input"]
                        ).as_message_part()
                        for call in calls
                    ],
                }
            )
            messages.extend(
                {"role": "tool", "tool_call_id": call["id"], "content": call["toolCall"]["result"]} for call in calls
            )
        messages.extend({"role": "assistant", "content": answer} for answer in answers)
        calls.clear()
        answers.clear()

    for message in history:
        if message.get("role") == "user":
            close_turn()
            messages.append({"role": "user", "content": message.get("content", "")})
        elif "toolCall" in message:
            if "result" in message["toolCall"]:
                calls.append(message)
        elif message.get("role") == "assistant" and message.get("content"):
            answers.append(message["content"])
    close_turn()
    return messages


def _parsed_arguments(call: StreamedToolCall) -> dict[str, Any] | None:
    """The call's arguments as an object, or None when the model sent something else."""
    try:
        arguments = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return None
    return arguments if isinstance(arguments, dict) else None


@dataclass(frozen=True)
class OpenAICompatibleProvider:
    """An agent answering through an OpenAI-compatible chat-completions endpoint."""

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)
    max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS
    connect_timeout: float = CONNECT_TIMEOUT_SECONDS
    read_timeout: float = READ_TIMEOUT_SECONDS

    @property
    def endpoint(self) -> str:
        return f"{self.base_url.rstrip('/')}/chat/completions"

    def _client(self) -> httpx.AsyncClient:
        headers = {"Accept": "text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        timeout = httpx.Timeout(self.read_timeout, connect=self.connect_timeout)
        return httpx.AsyncClient(headers=headers, timeout=timeout)

    def _body(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, last: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            body["tools"] = tools
            if last:
                body["tool_choice"] = "none"
        return body

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        """Call the model, run the tools it asks for and call it again, until it answers."""
        notes = [reader_note(request.locale, request.timezone)]
        if request.dashboard:
            notes.append(dashboard_note(request.dashboard, request.context_filters))
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            *({"role": "system", "content": note} for note in notes),
            *history_messages(request.history),
            {"role": "user", "content": request.question},
        ]
        tools = [tool_definition(spec) for spec in request.tool_specs]
        async with self._client() as client:
            for round_number in range(self.max_tool_rounds + 1):
                completion = Completion()
                body = self._body(messages, tools, last=round_number == self.max_tool_rounds)
                async for event in self._complete(client, body, completion, request):
                    yield event
                yield ModelUsage(self.model, completion.input_tokens, completion.output_tokens)
                if not completion.tool_calls:
                    return
                if round_number == self.max_tool_rounds:
                    break
                messages.append(completion.assistant_message())
                for call in completion.calls():
                    result = await self._tool_result(call, request)
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        limit = self.max_tool_rounds
        raise ModelProviderError(f"The model was still calling tools after its limit of {limit} tool rounds")

    async def _tool_result(self, call: StreamedToolCall, request: ProviderRequest) -> str:
        arguments = _parsed_arguments(call)
        if arguments is None:  # the model hears of it and may retry; nothing ran
            return json.dumps({"error": f"The arguments of {call.name} are not a JSON object"})
        return await request.call_tool(call.name, arguments)

    async def _complete(
        self, client: httpx.AsyncClient, body: dict[str, Any], completion: Completion, request: ProviderRequest
    ) -> AsyncIterator[ProviderEvent]:
        """One streamed model call: pass its deltas on while assembling ``completion``."""
        try:
            async with client.stream("POST", self.endpoint, json=body) as response:
                if response.status_code != httpx.codes.OK:
                    detail = (await response.aread())[:500]
                    logger.warning("Model provider %s: HTTP %s %r", self.endpoint, response.status_code, detail)
                    raise _status_error(response.status_code)
                async with aclosing(sse_data(response.aiter_lines())) as payloads:
                    async for data in payloads:
                        if request.cancel.cancelled:
                            raise asyncio.CancelledError
                        if data == "[DONE]":
                            completion.done = True
                            break
                        for event in completion.absorb(_chunk(data)):
                            yield event
        except httpx.TimeoutException:
            raise ModelProviderError("The model provider did not answer in time")
        except httpx.ConnectError as exc:
            logger.warning("Model provider %s unreachable: %r", self.endpoint, exc)
            raise ModelProviderError("The model provider could not be reached")
        except httpx.HTTPError as exc:
            logger.warning("Model provider %s failed: %r", self.endpoint, exc)
            raise ModelProviderError("The connection to the model provider failed")
        if not (completion.done or completion.finish_reason):
            raise ModelProviderError("The model provider's stream ended before the answer was complete")


def _chunk(data: str) -> dict[str, Any]:
    try:
        chunk = json.loads(data)
    except json.JSONDecodeError:
        chunk = None
    if not isinstance(chunk, dict):
        logger.warning("Malformed chat-completions chunk: %r", data[:200])
        raise ModelProviderError("The model provider sent a malformed stream")
    return chunk


def openai_provider_for(agent: Agent, *, api_key: str) -> OpenAICompatibleProvider:
    """The provider of an ``openai`` agent: its base URL and model, with the API key its caller decrypted."""
    return OpenAICompatibleProvider(base_url=agent.base_url, model=agent.model, api_key=api_key)
