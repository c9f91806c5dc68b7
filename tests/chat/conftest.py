"""Chat API fixtures: an agent of account A, NDJSON helpers, pluggable tools and providers.

Stream tests run with real commits (``transaction=True``): runs execute in the runtime's threads on
their own database connections, and responses are read through Django's ASGI handler (AsyncClient).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.test import AsyncClient

from embedadmin.accounts import services as accounts
from embedadmin.chat import services
from embedadmin.chat.models import Agent, Run
from embedadmin.chat.runtime import ChatRuntime, get_runtime
from embedadmin.chat.tools import Tool, ToolContext, ToolRegistry, default_tools
from tests.tokens import sign_token

SESSION = {"externalId": "alice"}


@dataclass
class StreamResult:
    status: int
    content_type: str
    lines: list[dict[str, Any]]
    raw: bytes

    @property
    def ids(self) -> list[str]:
        return [line.get("id", "") for line in self.lines]

    def frames(self, message_id: str) -> list[dict[str, Any]]:
        return [line for line in self.lines if line.get("id") == message_id]

    @property
    def chat_id(self) -> str:
        return self.lines[0]["state"]["chatId"]


def parse_ndjson(raw: bytes) -> list[dict[str, Any]]:
    assert raw.endswith(b"\n"), raw[-200:]
    return [json.loads(line) for line in raw.decode().split("\n")[:-1]]


async def read_response(response) -> StreamResult:
    if response.streaming:
        raw = b"".join([chunk async for chunk in response.streaming_content])
        lines = parse_ndjson(raw)
    else:
        raw = response.content
        lines = [json.loads(raw)] if raw else []
    return StreamResult(response.status_code, response.get("Content-Type", ""), lines, raw)


@dataclass
class Chat:
    """Account A's agent and ways to call its Chat API."""

    agent: Agent
    api_key: str
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"/api/v1/public/{self.agent.account.name}/agents/{self.agent.public_id}/chat"

    def enable_token_auth(self) -> None:
        accounts.deployment_configure(deployment=self.agent.deployment, chat_token_auth=True)

    @staticmethod
    def token_header(secret: str, **claims: Any) -> dict[str, str]:
        """``X-Service-Auth-Token``: a chat-scoped token signed with ``secret`` carrying ``claims``."""
        return {"X-Service-Auth-Token": sign_token(secret, **{"scope": ["chat"], **claims})}

    @property
    def stream_url(self) -> str:
        return f"{self.base}/stream-chat-state"

    @property
    def abort_url(self) -> str:
        return f"{self.base}/abort"

    def key_headers(self) -> dict[str, str]:
        return {"Authorization": f"Api-Key {self.api_key}"}

    async def apost(
        self, url: str, body: Any, headers: dict[str, str] | None = None, client: AsyncClient | None = None
    ):
        data = body if isinstance(body, str | bytes) else json.dumps(body)
        return await (client or AsyncClient()).post(
            url, data=data, content_type="application/json", headers=self.key_headers() if headers is None else headers
        )

    async def astream(self, body: Any, headers: dict[str, str] | None = None) -> StreamResult:
        return await read_response(await self.apost(self.stream_url, body, headers))

    def post(self, url: str, body: Any, headers: dict[str, str] | None = None):
        return asyncio.run(self.apost(url, body, headers))

    def stream(self, body: Any, headers: dict[str, str] | None = None) -> StreamResult:
        return asyncio.run(self.astream(body, headers))

    def abort(self, body: Any, headers: dict[str, str] | None = None) -> StreamResult:
        return asyncio.run(self.aabort(body, headers))

    async def aabort(self, body: Any, headers: dict[str, str] | None = None) -> StreamResult:
        return await read_response(await self.apost(self.abort_url, body, headers))

    def ask(self, question: str = "How many orders?", **extra: Any) -> StreamResult:
        return self.stream({"input": question, "sessionSettings": SESSION, **extra})


@pytest.fixture
def runtime() -> Iterator[ChatRuntime]:
    """The process runtime, with its default tools and providers restored and its runs drained after."""
    instance = get_runtime()
    tools_for, provider_for = instance.tools_for, instance.provider_for
    yield instance
    assert instance.wait_idle(timeout=15), "a chat run did not end"
    instance.tools_for, instance.provider_for = tools_for, provider_for
    # The test client keeps the connection of the thread that ran the views open; close it.
    asyncio.run(sync_to_async(connections.close_all)())


@pytest.fixture
def chat(acme, runtime) -> Chat:
    agent = services.agent_create(account=acme.account, deployment=acme.deployment, name="Analyst")
    return Chat(agent=agent, api_key=acme.created.api_key)


class Gate:
    """A tool that blocks until released (or 10 s), to hold a run in the middle of a tool call."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
        self.entered.set()
        self.release.wait(10)
        return {"cubes": [], "searchQuery": arguments.get("searchQuery", "")}


def tools_with(name: str, function: Callable[[ToolContext, dict[str, Any]], dict[str, Any]]) -> ToolRegistry:
    registry = default_tools()
    current = registry.tools[name]
    registry.register(
        Tool(name=name, description=current.description, parameters=current.parameters, function=function)
    )
    return registry


def running_runs() -> int:
    return Run.objects.filter(status=Run.Status.RUNNING).count()


class LiveStream:
    """A response read chunk by chunk as the server sends it (each chunk must be one whole line)."""

    def __init__(self, response) -> None:
        assert response.status_code == 200, response.content if not response.streaming else ""
        self._chunks = response.streaming_content.__aiter__()
        self.lines: list[dict[str, Any]] = []

    async def next(self, timeout: float = 5.0) -> dict[str, Any] | None:
        try:
            chunk = await asyncio.wait_for(self._chunks.__anext__(), timeout)
        except StopAsyncIteration:
            return None
        assert chunk.endswith(b"\n"), chunk
        assert chunk.count(b"\n") == 1, chunk
        self.lines.append(json.loads(chunk))
        return self.lines[-1]

    async def until(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 5.0) -> dict[str, Any]:
        while True:
            line = await self.next(timeout)
            assert line is not None, f"stream ended before the expected line: {self.lines}"
            if predicate(line):
                return line

    async def rest(self, timeout: float = 5.0) -> list[dict[str, Any]]:
        while await self.next(timeout) is not None:
            pass
        return self.lines


async def wait_for(event: threading.Event, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    assert await loop.run_in_executor(None, event.wait, timeout), "timed out"
