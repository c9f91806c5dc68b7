"""Runs: resubscribe by messageId, one stream per thread, abort, and recovery of runs whose process died."""

from __future__ import annotations

import asyncio
import datetime as dt
import time

import pytest
from django.utils import timezone

from embedadmin.chat import services, tasks
from embedadmin.chat.models import Run, ThreadEvent
from embedadmin.chat.services import runs
from tests.chat.conftest import SESSION, Gate, LiveStream, read_response, tools_with, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def _final_answers(lines):
    return [m for m in lines if m.get("role") == "assistant" and (m.get("graphPath") or [""])[0] == "final"]


def test_same_message_id_resubscribes_and_the_thread_holds_one_answer(chat, runtime):
    first = chat.ask("first")
    gate = Gate()
    runtime.tools_for = lambda agent: tools_with("serviceMeta", gate)
    body = {
        "input": "second",
        "chatId": first.chat_id,
        "messageId": "1700000000001-message",
        "sessionSettings": SESSION,
    }

    async def scenario():
        one = LiveStream(await chat.apost(chat.stream_url, body))
        await one.until(lambda line: line.get("toolCall") is not None)
        two = LiveStream(await chat.apost(chat.stream_url, body))
        await two.until(lambda line: line.get("toolCall") is not None)
        other = await read_response(await chat.apost(chat.stream_url, {**body, "messageId": "1700000000002-message"}))
        missing = await read_response(
            await chat.apost(chat.stream_url, {k: v for k, v in body.items() if k != "messageId"})
        )
        gate.release.set()
        return await one.rest(), await two.rest(), other, missing

    one, two, other, missing = asyncio.run(scenario())

    assert one == two
    assert [line["id"] for line in one][:2] == ["__cutoff__", "1700000000001-message"]
    assert one[0]["state"] == {"chatId": first.chat_id, "isStreaming": True}
    assert [line["id"] for line in one[-2:]] == ["__state__", "__usage__"]
    for refused in (other, missing):
        assert refused.status == 409
        assert refused.lines == [{"error": "Streaming for thread is in progress"}]
    assert Run.objects.filter(message_id="1700000000001-message").count() == 1
    assert Run.objects.count() == 2
    messages = one[-2]["state"]["messages"]
    assert len(_final_answers(messages)) == 2  # one per question, none duplicated
    assert [m["content"] for m in messages if m["role"] == "user"] == ["first", "second"]


def test_the_same_message_id_after_the_run_ended_replays_it(chat):
    body = {"input": "q", "messageId": "1700000000003-message", "sessionSettings": SESSION}
    first = chat.stream(body)

    again = chat.stream({**body, "chatId": first.chat_id})

    assert again.lines[0]["state"] == {"chatId": first.chat_id, "isStreaming": False}
    assert again.lines[1:] == first.lines[1:]
    assert Run.objects.count() == 1


def test_abort_during_a_tool_call_ends_the_stream_within_a_second_keeping_what_was_produced(chat, runtime):
    gate = Gate()
    runtime.tools_for = lambda agent: tools_with("serviceMeta", gate)

    async def scenario():
        live = LiveStream(await chat.apost(chat.stream_url, {"input": "slow", "sessionSettings": SESSION}))
        chat_id = (await live.next())["state"]["chatId"]
        await live.until(lambda line: line.get("toolCall") is not None)
        await wait_for(gate.entered)
        started = time.monotonic()
        aborted = await chat.apost(chat.abort_url, {"chatId": chat_id, "sessionSettings": SESSION})
        lines = await live.rest(timeout=2)
        elapsed = time.monotonic() - started
        gate.release.set()
        return aborted, lines, elapsed, chat_id

    aborted, lines, elapsed, chat_id = asyncio.run(scenario())

    assert aborted.status_code == 204
    assert aborted.content == b""
    assert elapsed < 1.0
    assert [line["id"] for line in lines][-3:] == ["__state__", "__aborted__", "__usage__"]
    assert lines[-2] == {
        "id": "__aborted__",
        "role": "assistant",
        "type": "abort",
        "code": "chat_aborted",
        "sort": lines[-2]["sort"],
    }
    assert lines[-2]["sort"] == lines[-3]["sort"] + 1 == lines[-1]["sort"] - 1
    assert _final_answers(lines) == []
    kept = {m["id"]: m for m in lines[-3]["state"]["messages"]}
    assert kept[lines[1]["id"]]["content"] == "slow"
    tool = next(m for m in kept.values() if "toolCall" in m)
    assert tool["isInProcess"] is True
    assert "result" not in tool["toolCall"]
    assert Run.objects.get().status == "aborted"
    # The thread takes the next message.
    runtime.tools_for = lambda agent: tools_with("serviceMeta", lambda context, arguments: {"cubes": []})
    after = chat.stream({"input": "again", "chatId": chat_id, "sessionSettings": SESSION})
    assert after.status == 200
    assert after.ids[-1] == "__usage__"
    assert len(_final_answers(after.lines)) == 1


def test_abort_rules(chat, acme):
    done = chat.ask()

    assert chat.abort({"chatId": "nosuch", "sessionSettings": SESSION}).status == 404
    assert chat.abort({"chatId": "nosuch", "sessionSettings": SESSION}).lines == [{"error": "Chat 'nosuch' not found"}]
    other = chat.abort({"chatId": done.chat_id, "sessionSettings": {"externalId": "eve"}})
    assert other.status == 403
    assert other.lines == [{"error": "You do not own this chat thread"}]
    owner = chat.abort({"chatId": done.chat_id, "sessionSettings": {"externalId": "ALICE"}})
    assert (owner.status, owner.raw) == (204, b"")  # a thread that finished streaming: nothing to stop
    account_wide = chat.abort({"chatId": done.chat_id})
    assert (account_wide.status, account_wide.raw) == (204, b"")
    assert chat.abort({}).status == 400
    assert Run.objects.get().status == "completed"


def _stranded_run(chat, *, age_seconds: int) -> tuple[str, Run]:
    """A thread whose run lost its process: started, never executed, heartbeat in the past."""
    first = chat.ask()
    thread_run = Run.objects.get()
    run = Run.objects.create(
        thread=thread_run.thread,
        message_id="1700000000009-message",
        input="lost",
        first_seq=11,
        heartbeat_at=timezone.now() - dt.timedelta(seconds=age_seconds),
        started_at=timezone.now() - dt.timedelta(seconds=age_seconds),
        worker="gone:1",
    )
    return first.chat_id, run


def test_a_run_with_a_fresh_heartbeat_still_blocks_the_thread(chat):
    chat_id, run = _stranded_run(chat, age_seconds=1)

    result = chat.stream({"input": "hi", "chatId": chat_id, "sessionSettings": SESSION})

    assert result.status == 409
    assert services.runs_fail_stale() == 0
    run.refresh_from_db()
    assert run.status == "running"
    Run.objects.filter(pk=run.pk).delete()


def test_a_stale_run_is_failed_and_the_thread_takes_new_messages(chat):
    chat_id, run = _stranded_run(chat, age_seconds=60)

    result = chat.stream({"input": "hi", "chatId": chat_id, "sessionSettings": SESSION})

    assert result.status == 200
    assert result.ids[-1] == "__usage__"
    run.refresh_from_db()
    assert run.status == "failed"
    terminal = list(ThreadEvent.objects.filter(run=run).order_by("seq").values_list("message", flat=True))
    assert [frame["id"] for frame in terminal] == ["__state__", "__error__", "__usage__"]
    assert terminal[1]["error"] == "The agent stopped unexpectedly; send the message again"


def test_the_beat_task_fails_stale_runs_and_a_resubscribe_gets_the_error(chat):
    chat_id, run = _stranded_run(chat, age_seconds=31)

    assert tasks.fail_stale_runs() == 1
    assert tasks.fail_stale_runs() == 0  # idempotent

    replay = chat.stream({"input": "lost", "chatId": chat_id, "messageId": run.message_id, "sessionSettings": SESSION})
    assert [line["id"] for line in replay.lines] == ["__cutoff__", "__state__", "__error__", "__usage__"]
    assert replay.lines[0]["state"]["isStreaming"] is False


def test_a_response_tailing_a_run_whose_process_dies_ends_with_the_error(chat, monkeypatch):
    from embedadmin.chat import streaming

    chat_id, run = _stranded_run(chat, age_seconds=5)
    monkeypatch.setattr(streaming, "POLL_SECONDS", 0.2)
    monkeypatch.setattr(runs, "STALE_AFTER", dt.timedelta(seconds=6))

    started = time.monotonic()
    replay = chat.stream({"input": "lost", "chatId": chat_id, "messageId": run.message_id, "sessionSettings": SESSION})

    assert time.monotonic() - started < 4
    assert [line["id"] for line in replay.lines] == ["__cutoff__", "__state__", "__error__", "__usage__"]
    assert replay.lines[0]["state"]["isStreaming"] is True


def test_a_resent_message_with_another_input_is_400_and_writes_nothing(chat):
    body = {"input": "q", "messageId": "1700000000004-message", "sessionSettings": SESSION}
    first = chat.stream(body)
    events = ThreadEvent.objects.count()

    response = chat.post(chat.stream_url, {**body, "chatId": first.chat_id, "input": "another question"})

    assert response.status_code == 400
    assert response.json() == {
        "error": "messageId 1700000000004-message was already sent in this thread with another input"
    }
    assert (Run.objects.count(), ThreadEvent.objects.count()) == (1, events)


def test_resends_after_the_run_ended_replay_it_and_write_nothing(chat):
    body = {"input": "q", "messageId": "1700000000005-message", "sessionSettings": SESSION}
    first = chat.stream(body)
    events = ThreadEvent.objects.count()
    resend = {**body, "chatId": first.chat_id}

    async def one():
        return await read_response(await chat.apost(chat.stream_url, resend))

    async def scenario():
        return await asyncio.gather(*(one() for _ in range(8)))

    replays = asyncio.run(scenario())

    assert {replay.status for replay in replays} == {200}
    assert all(replay.lines[1:] == first.lines[1:] for replay in replays)
    assert (Run.objects.count(), ThreadEvent.objects.count()) == (1, events)
