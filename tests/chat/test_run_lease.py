"""A chat run is a lease its process renews (``CHAT_RUN_HEARTBEAT_SECONDS``, stale after ``CHAT_RUN_STALE_SECONDS``):
a run whose process is killed is failed and its thread takes messages within 5 s, with its partial answer and its
unanswered tool call closed before the error frame; a live run, or one queued behind others, is never taken for
dead however long its tool call takes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from embedadmin.chat import events, selectors, services
from embedadmin.chat.models import Run, Thread, ThreadEvent
from embedadmin.chat.runtime import ChatRuntime
from embedadmin.chat.services import runs
from tests.asgi_server import database_url_for_subprocess
from tests.chat.conftest import SESSION, Gate, LiveStream, tools_with, wait_for
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
REPO = Path(__file__).resolve().parents[2]

# A web process executing one run: its agent writes part of an answer, then calls serviceSqlApi, whose query
# never returns; the process says so on stdout and is killed there.
CHILD_SCRIPT = """
import os, sys, time
import django
django.setup()
from embedadmin.chat.providers.base import ContentDelta
from embedadmin.chat.runtime import ChatRuntime
from tests.chat.conftest import tools_with

class Scripted:
    async def stream(self, request):
        yield ContentDelta("Counting the orders")
        yield ContentDelta(" of last week")
        await request.call_tool("serviceSqlApi", {"sqlQuery": "SELECT count(*) FROM orders"})
        yield ContentDelta("never written")

def hang(context, arguments):
    print("in-tool", flush=True)
    time.sleep(3600)  # a query that never returns: the process is killed in it
    return {}

runtime = ChatRuntime()
runtime.provider_for = lambda agent: Scripted()
runtime.tools_for = lambda agent: tools_with("serviceSqlApi", hang)
runtime.execute(int(sys.argv[1]))
"""


class ChildProcess:
    """A :class:`~embedadmin.chat.services.runs.RunSubmitter` that hands each run to a process of its own."""

    def __init__(self) -> None:
        self.processes: list[subprocess.Popen] = []
        self.environ = {
            "DATABASE_URL": database_url_for_subprocess(),
            "EMBEDADMIN_ALLOW_DEV_SECRET": "true",
            "DJANGO_SETTINGS_MODULE": "embedadmin.settings",
            "REDIS_URL": "",
            "PATH": "/usr/bin:/bin",
        }

    def submit(self, run_id: int, *, after: threading.Event | None = None) -> None:
        self.processes.append(
            subprocess.Popen(
                [sys.executable, "-c", CHILD_SCRIPT, str(run_id)],
                cwd=REPO,
                env=self.environ,
                stdout=subprocess.PIPE,
                text=True,
            )
        )


def test_the_lease_values_are_settings():
    assert runs.HEARTBEAT_SECONDS == settings.CHAT_RUN_HEARTBEAT_SECONDS == 1.0
    assert runs.STALE_AFTER.total_seconds() == settings.CHAT_RUN_STALE_SECONDS == 3.0


def test_a_run_whose_process_is_killed_frees_its_thread_within_5_seconds_with_its_messages_closed(chat, on_postgres):
    first = chat.ask("How many orders?")
    thread = Thread.objects.get(chat_id=first.chat_id)
    child = ChildProcess()
    plan = services.chat_stream_open(
        agent=chat.agent,
        user=thread.owner,
        request=services.StreamRequest(
            input="Orders last week?", chat_id=first.chat_id, message_id="1700000000500-message"
        ),
        runtime=child,
    )
    [process] = child.processes
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "in-tool\n"
        killed_run = Run.objects.get(pk=plan.run_id)
        assert killed_run.worker  # claimed by the child
        process.kill()
        killed = time.monotonic()
        process.wait(10)

        answers = []

        def thread_free() -> bool:
            answers.append(chat.ask("And this week?", chatId=first.chat_id))
            assert answers[-1].status in (200, 409)
            return answers[-1].status == 200

        wait_until(thread_free, "the killed run's thread takes messages", every=0.1)
        freed = time.monotonic() - killed
        answer, refused = answers[-1], len(answers) - 1
    finally:
        process.kill()
        process.wait(10)

    assert freed <= 5.0, f"freed {freed:.2f} s after the kill"
    assert refused >= 1  # the run's lease was still valid at the kill
    assert answer.ids[-1] == "__usage__"
    assert "__error__" not in answer.ids
    killed_run.refresh_from_db()
    assert killed_run.status == "failed"
    frames = list(ThreadEvent.objects.filter(run=killed_run).order_by("seq").values_list("message", flat=True))
    answer_id, tool_id = f"{killed_run.message_id}-answer", f"{killed_run.message_id}-tool-1"
    assert [(frame["id"], frame.get("isInProcess")) for frame in frames] == [
        (killed_run.message_id, False),
        (answer_id, True),
        (answer_id, True),
        (tool_id, True),
        (answer_id, False),  # the partial answer, closed
        (tool_id, False),  # the tool call, answered with the error
        ("__state__", None),
        ("__error__", None),
        ("__usage__", None),
    ]
    assert frames[4]["content"] == "Counting the orders of last week"
    assert frames[4]["isDelta"] is False
    assert frames[5]["toolCall"]["result"] == '{"error": "The agent stopped unexpectedly; send the message again"}'
    assert frames[7]["error"] == "The agent stopped unexpectedly; send the message again"
    messages, _ = selectors.thread_state(thread_id=thread.pk)
    assert [m["id"] for m in messages if m.get("isInProcess")] == []
    assert [m["content"] for m in messages if m["role"] == "user"] == [
        "How many orders?",
        "Orders last week?",
        "And this week?",
    ]

    # A resubscribe to the killed run replays it closed: its __state__ holds no message in process.
    replay = chat.stream(
        {
            "input": "Orders last week?",
            "chatId": first.chat_id,
            "messageId": killed_run.message_id,
            "sessionSettings": SESSION,
        }
    )
    assert replay.ids[-3:] == ["__state__", "__error__", "__usage__"]
    assert replay.lines[0]["state"]["isStreaming"] is False
    state = replay.lines[-3]["state"]["messages"]
    assert not any(m.get("isInProcess") for m in state)
    closed = {m["id"]: m for m in state}
    assert closed[answer_id]["content"] == "Counting the orders of last week"
    assert "error" in closed[tool_id]["toolCall"]["result"]


def test_a_killed_run_nobody_watches_is_failed_by_the_beat_task(chat, on_postgres):
    first = chat.ask()
    thread = Thread.objects.get(chat_id=first.chat_id)
    child = ChildProcess()
    plan = services.chat_stream_open(
        agent=chat.agent,
        user=thread.owner,
        request=services.StreamRequest(input="slow", chat_id=first.chat_id),
        runtime=child,
    )
    [process] = child.processes
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "in-tool\n"
        assert services.runs_fail_stale() == 0  # alive: its lease is renewed
        process.kill()
        process.wait(10)
        # the beat task runs until the killed run's lease lapses (3 s, on the database's clock) and fails it
        sweeps: list[int] = []

        def beat() -> int:
            sweeps.append(services.runs_fail_stale())
            return sweeps[-1]

        wait_until(beat, "the beat task fails the killed run", every=0.2)
        failed = sweeps[-1]
    finally:
        process.kill()
        process.wait(10)

    assert failed == 1
    messages, _ = selectors.thread_state(thread_id=thread.pk)
    assert not any(m.get("isInProcess") for m in messages)
    assert Run.objects.get(pk=plan.run_id).status == "failed"


def test_a_live_run_in_a_long_tool_call_keeps_its_lease(chat, runtime):
    """A tool call longer than the stale window: the run's heartbeat keeps the thread busy and the run alive."""
    gate = Gate()
    runtime.tools_for = lambda agent: tools_with("serviceMeta", gate)
    hold = settings.CHAT_RUN_STALE_SECONDS + 1.5

    async def scenario():
        live = LiveStream(await chat.apost(chat.stream_url, {"input": "slow", "sessionSettings": SESSION}))
        chat_id = (await live.next())["state"]["chatId"]
        await wait_for(gate.entered)
        await asyncio.sleep(hold)
        refused = await chat.astream({"input": "meanwhile", "chatId": chat_id, "sessionSettings": SESSION})
        swept = await asyncio.to_thread(services.runs_fail_stale)
        gate.release.set()
        return await live.rest(timeout=10), refused, swept

    try:
        lines, refused, swept = asyncio.run(scenario())
    finally:
        gate.release.set()

    assert refused.status == 409
    assert swept == 0
    assert lines[-1]["id"] == "__usage__"
    assert "__error__" not in [line["id"] for line in lines]
    assert Run.objects.get().status == "completed"


def test_a_run_queued_behind_a_busy_pool_keeps_its_lease(chat):
    """A process whose one runtime thread is busy for longer than the stale window: the run waiting for it is
    renewed from the queue, and runs to completion once the thread is free."""
    first, second = chat.ask("one"), chat.ask("two")
    busy = ChatRuntime(max_workers=1)
    gate = Gate()
    busy.tools_for = lambda agent: tools_with("serviceMeta", gate)
    owner = Thread.objects.get(chat_id=first.chat_id).owner
    try:
        holding = services.chat_stream_open(
            agent=chat.agent,
            user=owner,
            request=services.StreamRequest(input="hold", chat_id=first.chat_id),
            runtime=busy,
        )
        assert gate.entered.wait(5)
        queued = services.chat_stream_open(
            agent=chat.agent,
            user=owner,
            request=services.StreamRequest(input="queued", chat_id=second.chat_id),
            runtime=busy,
        )
        # queued for longer than the stale window: real time on the database's clock, which is the behaviour tested
        time.sleep(settings.CHAT_RUN_STALE_SECONDS + 1.5)
        swept = services.runs_fail_stale()
        refused = chat.ask("meanwhile", chatId=second.chat_id)
        gate.release.set()
        assert busy.wait_idle(timeout=15)
    finally:
        gate.release.set()
        busy.shutdown()
        connection.close()

    assert swept == 0
    assert refused.status == 409
    statuses = dict(Run.objects.filter(pk__in=[holding.run_id, queued.run_id]).values_list("pk", "status"))
    assert statuses == {holding.run_id: "completed", queued.run_id: "completed"}
    answered = selectors.thread_state(thread_id=queued.thread_id)[0]
    finals = [m for m in answered if (m.get("graphPath") or [""])[0] == events.FINAL_PATH[0]]
    assert len(finals) == 2  # "two", then the queued question
    assert finals[-1]["sort"] > queued.from_seq
