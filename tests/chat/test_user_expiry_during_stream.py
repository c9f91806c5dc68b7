"""A user expiring while its run streams: the expiry task stops the run first, so the open stream ends with
the closing frames of an aborted run and nothing is logged as an error; a run whose thread vanishes under a
stream anyway (deleted outright) still ends the stream with closing frames."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from embedadmin.chat import tasks
from embedadmin.chat.models import ChatUser, Run, Thread
from embedadmin.chat.runtime import releasing_connection
from embedadmin.chat.streaming import CHAT_GONE_MESSAGE
from tests.chat.conftest import SESSION, Gate, LiveStream, tools_with, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def _expire_now() -> None:
    ChatUser.objects.update(expires_at=timezone.now() - dt.timedelta(seconds=1))


def test_the_expiry_task_ends_an_open_stream_with_its_closing_frames_and_no_error(chat, runtime, caplog):
    gate = Gate()
    runtime.tools_for = lambda agent: tools_with("serviceMeta", gate)
    body = {"input": "How many orders?", "messageId": "1700000000300-message", "sessionSettings": SESSION}

    async def scenario() -> tuple[list[dict], int]:
        stream = LiveStream(await chat.apost(chat.stream_url, body))
        await stream.until(lambda line: line.get("toolCall") is not None)
        await wait_for(gate.entered)
        await sync_to_async(_expire_now)()
        # when: the Celery task deleting expired users runs while the run waits in a tool call (and the
        # stream is read meanwhile, as a server sends it)
        rest = asyncio.create_task(stream.rest(timeout=10))
        deleted = await sync_to_async(releasing_connection, thread_sensitive=False)(tasks.expire_ephemeral_users)
        return await rest, deleted

    caplog.set_level(logging.WARNING)
    try:
        lines, deleted = asyncio.run(scenario())
    finally:
        gate.release.set()
        assert runtime.wait_idle(timeout=15)

    # then: the user and its threads are gone, and the stream ended as an aborted run ends
    assert deleted == 1
    assert (ChatUser.objects.count(), Thread.objects.count(), Run.objects.count()) == (0, 0, 0)
    assert [line["id"] for line in lines[-3:]] == ["__state__", "__aborted__", "__usage__"]
    assert lines[-3]["state"]["messages"][0]["content"] == "How many orders?"
    assert [record for record in caplog.records if record.levelno >= logging.ERROR] == []
    assert not any(record.exc_info for record in caplog.records)


def test_a_thread_deleted_under_a_stream_ends_it_with_closing_frames(chat, runtime, caplog):
    gate = Gate()
    runtime.tools_for = lambda agent: tools_with("serviceMeta", gate)
    body = {"input": "How many orders?", "messageId": "1700000000301-message", "sessionSettings": SESSION}

    async def scenario() -> list[dict]:
        stream = LiveStream(await chat.apost(chat.stream_url, body))
        await stream.until(lambda line: line.get("toolCall") is not None)
        await wait_for(gate.entered)
        # when: the user goes with its threads without its run being stopped first (an expired user's own
        # next request deletes it too)
        await sync_to_async(lambda: ChatUser.objects.all().delete())()
        return await stream.rest(timeout=10)

    try:
        lines = asyncio.run(scenario())
    finally:
        gate.release.set()
        assert runtime.wait_idle(timeout=15)

    # then: the stream still ends with a failed run's closing frames, holding what it had seen
    assert [line["id"] for line in lines[-3:]] == ["__state__", "__error__", "__usage__"]
    assert lines[-2]["error"] == CHAT_GONE_MESSAGE
    messages = lines[-3]["state"]["messages"]
    assert messages[0]["content"] == "How many orders?"
    assert all(message["isInProcess"] is False for message in messages)
