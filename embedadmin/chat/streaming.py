"""The body of a stream-chat-state response: an async generator of NDJSON lines.

A response never runs the agent: it tails the thread's event log. It subscribes to the thread's
channel first, then reads what the run already logged (so a resubscribe replays the run from its
start), then follows notifications; a gap in the sequence, a quiet interval, or the bus being away
(Redis down: the subscription says so every ``FALLBACK_POLL_SECONDS``) sends it back to the log, so a
stream outlives Redis and never sends a frame twice. The ``__state__`` marker is filled with the thread's
messages as it goes out. It holds no transaction or lock: each database read is a short autocommit query
in a worker thread.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.utils import timezone

from embedadmin.chat import events, selectors, services
from embedadmin.chat.bus import EventBus, thread_channel
from embedadmin.chat.models import Run
from embedadmin.chat.runtime import releasing_connection
from embedadmin.chat.selectors import LoggedFrame
from embedadmin.chat.services import StreamPlan
from embedadmin.chat.services.runs import terminal_frames

# How long a response waits for a notification before it looks at the log (and the run's health).
POLL_SECONDS = 2.0
CHAT_GONE_MESSAGE = "This chat no longer exists (its user expired); start a new chat"
T = TypeVar("T")


async def _db(function: Callable[..., T], **kwargs: Any) -> T:
    return await sync_to_async(releasing_connection, thread_sensitive=False)(function, **kwargs)


def _line(frame: events.Frame) -> bytes:
    return (json.dumps(frame, separators=(",", ":"), default=str) + "\n").encode()


def _run_alive(*, run_id: int, thread_id: int) -> bool:
    """Whether a tailed run can still log frames: False once it is gone (its user expired) or ended;
    a run whose process died is failed here, which logs its terminal frames."""
    health = selectors.run_health(run_id=run_id)
    if health is None:
        return False
    status, heartbeat_at = health
    if status == Run.Status.RUNNING and services.heartbeat_stale(heartbeat_at, timezone.now()):
        services.run_fail_if_stale(run_id=run_id, thread_id=thread_id)
    return True


def _closed(seen: list[events.Frame]) -> list[events.Frame]:
    """The messages of the frames a response sent, none left in process."""
    return [{**message, "isInProcess": False} for message in events.consolidate(seen)]


def closing_frames(*, next_seq: int, seen: list[events.Frame]) -> list[events.Frame]:
    """The frames that end a response whose run vanished with its thread (the user expired): those of a
    failed run, the ``__state__`` holding the messages this response saw, none of them left in process."""
    frames = []
    for _, frame in terminal_frames(first_seq=next_seq, outcome=Run.Status.FAILED, error_message=CHAT_GONE_MESSAGE):
        if frame.get("id") == events.STATE_ID:
            frame = events.state(sort=frame["sort"], messages=_closed(seen))
        frames.append(frame)
    return frames


async def tail_run(*, thread_id: int, run_id: int, from_seq: int, bus: EventBus) -> AsyncIterator[events.Frame]:
    """The frames of one run from ``from_seq`` to its ``__usage__`` frame.

    Frames come from notifications while they arrive in sequence, from the log otherwise: after a gap, a
    quiet ``POLL_SECONDS``, or at once while the bus is away (its subscription then answers every
    ``FALLBACK_POLL_SECONDS``). Each frame goes out once, in ``seq`` order, whichever way it came. A run
    that is gone (its thread deleted with its user) ends the response with the closing frames of a
    failed run.
    """
    loop = asyncio.get_running_loop()
    last = from_seq - 1
    seen: list[events.Frame] = []
    async with bus.subscribe(thread_channel(thread_id)) as subscription:
        pending: list[LoggedFrame] = await _db(selectors.run_frames_after, run_id=run_id, after_seq=last)
        checked_at = loop.time()
        while True:
            for logged in pending:
                if logged.seq != last + 1:
                    continue
                last = logged.seq
                checked_at = loop.time()
                message = logged.message
                if message.get("id") == events.STATE_ID:
                    messages = await _db(selectors.thread_messages, thread_id=thread_id, before_seq=logged.seq)
                    # None at all: the thread went (its user expired) after the run's end was logged.
                    message = events.state(sort=message["sort"], messages=messages or _closed(seen))
                elif events.is_conversation_message(message):
                    seen.append(message)
                yield message
                if message.get("id") == events.USAGE_ID:
                    return
            note = await subscription.get(timeout=POLL_SECONDS)
            if note is not None and (note.get("kind") != "event" or note.get("run") != run_id or note["seq"] <= last):
                pending = []  # an abort, another run's frame, or a frame already sent
            elif note is not None and note["seq"] == last + 1:
                pending = [LoggedFrame(seq=note["seq"], message=note["message"])]
            else:
                pending = await _db(selectors.run_frames_after, run_id=run_id, after_seq=last)
                if not pending and loop.time() - checked_at >= POLL_SECONDS:
                    checked_at = loop.time()
                    if not await _db(_run_alive, run_id=run_id, thread_id=thread_id):
                        # Ended meanwhile (its last frames are logged now) or gone with its thread.
                        pending = await _db(selectors.run_frames_after, run_id=run_id, after_seq=last)
                        if not pending:
                            for frame in closing_frames(next_seq=last + 1, seen=seen):
                                yield frame
                            return


async def plan_stream(plan: StreamPlan, *, bus: EventBus) -> AsyncIterator[bytes]:
    """The NDJSON lines of a response: ``__cutoff__``, then a run's frames or the thread's state."""
    try:
        yield _line(events.cutoff(chat_id=plan.chat_id, is_streaming=plan.is_streaming))
    finally:
        if plan.first_line_sent is not None:
            plan.first_line_sent.set()
    if plan.run_id is not None:
        async for frame in tail_run(thread_id=plan.thread_id, run_id=plan.run_id, from_seq=plan.from_seq, bus=bus):
            yield _line(frame)
        return
    messages, last_seq = await _db(selectors.thread_state, thread_id=plan.thread_id)
    sort = last_seq + 1
    yield _line(events.state(sort=sort, messages=messages, is_streaming=plan.is_streaming))
    yield _line(events.usage(sort=sort + 1))
