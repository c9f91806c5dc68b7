"""Across processes with real Redis: a second web process (uvicorn) resubscribes to a run executing in
this process and aborts it; the run hears the abort through Redis, both streams end. Concurrent resends of an
answered message to two web processes replay it and write nothing."""

from __future__ import annotations

import asyncio
import json
import os
import time

import httpx
import pytest

from embedadmin.chat.models import Run, ThreadEvent
from embedadmin.chat.runtime import get_runtime
from tests.asgi_server import uvicorn_server
from tests.chat.conftest import SESSION, Gate, LiveStream, tools_with, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def redis_url(settings) -> str:
    url = os.environ.get("TEST_REDIS_URL")
    assert url, "this test needs Redis (TEST_REDIS_URL, from scripts/test-services.sh)"
    settings.REDIS_URL = url
    return url


@pytest.fixture
def second_process(redis_url, on_postgres):
    with uvicorn_server(REDIS_URL=redis_url) as base:
        yield base


def test_resubscribe_and_abort_reach_a_run_in_another_process(chat, redis_url, second_process):
    runtime = get_runtime()  # this process's runtime on the Redis bus
    assert type(runtime.bus).__name__ == "RedisBus"
    gate = Gate()
    runtime.tools_for = lambda agent: tools_with("serviceMeta", gate)
    body = {"input": "slow", "messageId": "1700000000100-message", "sessionSettings": SESSION}

    async def scenario():
        here = LiveStream(await chat.apost(chat.stream_url, body))
        chat_id = (await here.next())["state"]["chatId"]
        await here.until(lambda line: line.get("toolCall") is not None)
        await wait_for(gate.entered)
        async with httpx.AsyncClient(base_url=second_process, timeout=10) as client:
            there_lines = []
            async with client.stream(
                "POST", chat.stream_url, json={**body, "chatId": chat_id}, headers=chat.key_headers()
            ) as there:
                assert there.status_code == 200
                lines = there.aiter_lines()
                async for raw in lines:
                    there_lines.append(json.loads(raw))
                    if "toolCall" in there_lines[-1]:
                        break
                started = time.monotonic()
                aborted = await client.post(chat.abort_url, json={"chatId": chat_id}, headers=chat.key_headers())
                async for raw in lines:
                    there_lines.append(json.loads(raw))
            here_lines = await here.rest(timeout=2)
            elapsed = time.monotonic() - started
        gate.release.set()
        return here_lines, there_lines, aborted, elapsed

    try:
        here_lines, there_lines, aborted, elapsed = asyncio.run(scenario())
    finally:
        gate.release.set()
        assert runtime.wait_idle(timeout=15)

    assert aborted.status_code == 204
    assert elapsed < 1.0
    assert there_lines[0]["state"]["isStreaming"] is True
    assert there_lines[1:] == here_lines[1:]
    assert [line["id"] for line in here_lines[-3:]] == ["__state__", "__aborted__", "__usage__"]


@pytest.fixture
def third_process(redis_url, on_postgres):
    with uvicorn_server(REDIS_URL=redis_url) as base:
        yield base


def test_concurrent_resends_to_two_processes_replay_the_answer_and_write_nothing(
    chat, redis_url, second_process, third_process
):
    body = {"input": "q", "messageId": "1700000000101-message", "sessionSettings": SESSION}
    first = chat.stream(body)
    assert get_runtime().wait_idle(timeout=15)
    events = ThreadEvent.objects.count()
    resend = {**body, "chatId": first.chat_id}

    async def resend_to(base: str) -> tuple[int, list[dict]]:
        async with httpx.AsyncClient(base_url=base, timeout=20) as client:
            response = await client.post(chat.stream_url, json=resend, headers=chat.key_headers())
            return response.status_code, [json.loads(line) for line in response.text.splitlines() if line]

    async def scenario():
        return await asyncio.gather(*(resend_to(base) for base in [second_process, third_process] * 6))

    replays = asyncio.run(scenario())

    assert [status for status, _ in replays] == [200] * 12
    assert all(lines[1:] == first.lines[1:] for _, lines in replays)
    assert (Run.objects.count(), ThreadEvent.objects.count()) == (1, events)
