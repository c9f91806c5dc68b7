"""Across processes with real Redis: a second web process (uvicorn) resubscribes to a run executing in
this process and aborts it; the run hears the abort through Redis, both streams end."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from urllib.parse import quote

import httpx
import pytest
from django.db import connection

from embedadmin.chat.runtime import get_runtime
from tests.chat.conftest import SESSION, Gate, LiveStream, tools_with, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _database_url() -> str:
    """The test database, as a URL the second process can open."""
    p = connection.settings_dict
    return f"postgresql://{quote(p['USER'])}:{quote(p['PASSWORD'])}@{p['HOST']}:{p['PORT'] or 5432}/{p['NAME']}"


@pytest.fixture
def redis_url(settings) -> str:
    url = os.environ.get("TEST_REDIS_URL")
    assert url, "this test needs Redis (TEST_REDIS_URL, from scripts/test-services.sh)"
    settings.REDIS_URL = url
    return url


@pytest.fixture
def second_process(redis_url, on_postgres):
    port = _free_port()
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "REDIS_URL": redis_url,
        "EMBEDADMIN_ALLOW_DEV_SECRET": "true",
        "DJANGO_SETTINGS_MODULE": "embedadmin.settings",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "embedadmin.asgi:application", "--port", str(port), "--log-level", "warning"],
        env=env,
        stdout=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"{base}/livez", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert server.poll() is None, "the second web process exited"
            assert time.monotonic() < deadline, "the second web process did not start"
            time.sleep(0.2)
        yield base
    finally:
        server.terminate()
        server.wait(10)


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
