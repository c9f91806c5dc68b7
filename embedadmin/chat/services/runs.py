"""Runs and the thread's event log: start a run, log its frames, claim it for execution, keep its
heartbeat, end it, and fail the runs whose process died.

A running run is a lease: the process executing it renews ``heartbeat_at`` every ``HEARTBEAT_SECONDS``
(``settings.CHAT_RUN_HEARTBEAT_SECONDS``), and a run whose heartbeat is older than ``STALE_AFTER``
(``settings.CHAT_RUN_STALE_SECONDS``) lost its process: the next message, a resubscribe, a response tailing it
or the beat task fails it, and its thread takes messages again. A failed run's messages still in process (the
answer it was writing, a tool call without a result) are closed before its error frame.

The lease runs on the database's clock, never an application server's: every heartbeat (and a run's start and
end) is written as the database's ``now()``, and a run is ended for a stale heartbeat only by a conditional UPDATE
``WHERE heartbeat_at < now() - STALE_AFTER``, evaluated by the database. Two servers whose clocks differ therefore
agree on which runs are alive, and neither takes the other's live run for dead.

Locks are short: starting or ending a run locks its thread row for the few statements that decide the
thread's state (one running run, dense ``seq``); nothing is held while a response streams.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from django.conf import settings
from django.db import transaction
from django.db.models import Expression
from django.db.models.functions import Now

from embedadmin.audit.models import DailyUsage
from embedadmin.audit.services import usage_count
from embedadmin.chat import events, selectors
from embedadmin.chat.bus import EventBus, bus_for_settings, thread_channel
from embedadmin.chat.models import Run, Thread, ThreadEvent
from embedadmin.core.errors import BadRequest, Conflict, NotFound
from embedadmin.core.prepared import PreparedInsert, PreparedQuery

# A running run refreshes its heartbeat this often; one silent for STALE_AFTER lost its process.
HEARTBEAT_SECONDS: float = settings.CHAT_RUN_HEARTBEAT_SECONDS
STALE_AFTER = dt.timedelta(seconds=settings.CHAT_RUN_STALE_SECONDS)
STREAMING_IN_PROGRESS = "Streaming for thread is in progress"
RUN_LOST_MESSAGE = "The agent stopped unexpectedly; send the message again"


class RunSubmitter(Protocol):
    """Executes started runs: the process's :class:`~embedadmin.chat.runtime.ChatRuntime`. It is passed in
    because the runtime builds on these services."""

    def submit(self, run_id: int, *, after: threading.Event | None = None) -> None: ...


@dataclass(frozen=True)
class StreamPlan:
    """What a response sends: a run's frames from ``from_seq`` (tail), or the thread's state (snapshot)."""

    thread_id: int
    chat_id: str
    run_id: int | None = None
    from_seq: int = 0
    is_streaming: bool = False
    # Set once the response has sent its first line: a new run started in this process waits for it
    # (briefly), so the agent does not compete for the interpreter with the ``__cutoff__`` line.
    first_line_sent: threading.Event | None = None


_RUN_INSERT: PreparedInsert[Run] = PreparedInsert(Run)
_EVENT_INSERT: PreparedInsert[ThreadEvent] = PreparedInsert(ThreadEvent)
_THREAD_LOCK = PreparedQuery(
    Thread,
    lambda thread_id: (
        Thread.objects.select_for_update()
        .filter(pk=thread_id)
        .order_by()
        .annotate(locked_at=Now())
        .values_list("pk", "locked_at")
    ),
    sentinels=(-9_000_001,),
)
_RUN_OF_MESSAGE: PreparedQuery[Run] = PreparedQuery(
    Run,
    lambda thread_id, message_id: Run.objects.filter(thread_id=thread_id, message_id=message_id).order_by()[:1],
    sentinels=(-9_000_001, "\x00message-id"),
)


def _thread_lock(thread_id: int) -> dt.datetime | None:
    """Lock a thread row until the transaction ends; the database's time as it locked it, None when the thread no
    longer exists."""
    found = _THREAD_LOCK.rows(thread_id)
    return found[0][1] if found else None


def stale_before() -> Expression:
    """The moment before which a heartbeat is stale, computed by the database: ``now() - STALE_AFTER``."""
    return Now() - STALE_AFTER


def run_start(
    *,
    account_id: int,
    thread: Thread,
    question: str,
    message_id: str | None,
    query_context: dict[str, Any],
    bus: EventBus,
    runtime: RunSubmitter,
    context: dict[str, Any] | None = None,
) -> StreamPlan:
    """Start answering ``question`` in ``thread``, or re-attach to the run of the same ``message_id``.

    Under a short lock of the thread row: a run with this ``messageId`` is re-attached to (while it
    streams) or replayed (once it ended) and nothing is written (the same ``messageId`` with another input or
    another ``context`` is a 400); another running run refuses
    the message (409 ``Streaming for thread is in progress``) unless its process died. Otherwise the run
    and the user's message are logged, the message counted in the account's daily usage, and the run is handed to
    ``runtime`` once committed. Whether another run's process died is the database's judgement
    (:func:`_run_end_locked` with ``only_if_stale``), and the new run's start and heartbeat are the database's time.
    """
    context = context or {}
    with transaction.atomic():
        now = _thread_lock(thread.pk)
        if now is None:
            raise NotFound(f"Chat {thread.chat_id!r} not found")  # deleted with its user meanwhile
        if message_id is not None:
            same = _RUN_OF_MESSAGE.first(thread.pk, message_id)
            if same is not None:
                if same.input != question:
                    raise BadRequest(f"messageId {message_id} was already sent in this thread with another input")
                if same.context != context:
                    raise BadRequest(f"messageId {message_id} was already sent in this thread with another context")
                if same.status == Run.Status.RUNNING and _run_end_locked(
                    run=same, outcome=Run.Status.FAILED, bus=bus, error_message=RUN_LOST_MESSAGE, only_if_stale=True
                ):
                    same.status = Run.Status.FAILED
                return _plan_for_run(thread, same)
        running = selectors.thread_running_run(thread_id=thread.pk)
        if running is not None and not _run_end_locked(
            run=running, outcome=Run.Status.FAILED, bus=bus, error_message=RUN_LOST_MESSAGE, only_if_stale=True
        ):
            raise Conflict(STREAMING_IN_PROGRESS)
        seq = selectors.thread_last_seq(thread_id=thread.pk) + 1
        run = _RUN_INSERT.create(
            thread=thread,
            message_id=message_id or _generated_message_id(thread),
            input=question,
            query_context=query_context,
            context=context,
            first_seq=seq,
            heartbeat_at=now,
            started_at=now,
        )
        echo = [(seq, events.user_message(message_id=run.message_id, content=question, sort=seq))]
        _log_frames(run=run, frames=echo)
        first_line_sent = threading.Event()

        def publish_and_submit() -> None:
            _publish(bus, thread.pk, run.pk, echo)
            runtime.submit(run.pk, after=first_line_sent)

        transaction.on_commit(publish_and_submit)
        usage_count(account_id=account_id, kind=DailyUsage.Kind.CHAT_MESSAGES)  # last: its row is locked till commit
    return _plan_for_run(thread, run, first_line_sent)


def _publish(bus: EventBus, thread_id: int, run_id: int, frames: Sequence[tuple[int, dict[str, Any]]]) -> None:
    channel = thread_channel(thread_id)
    for seq, frame in frames:
        bus.publish(channel, {"kind": "event", "run": run_id, "seq": seq, "message": frame})


def _log_frames(*, run: Run, frames: Sequence[tuple[int, dict[str, Any]]]) -> None:
    ThreadEvent.objects.bulk_create(
        [ThreadEvent(thread_id=run.thread_id, run=run, seq=seq, message=frame) for seq, frame in frames]
    )


def terminal_frames(
    *, first_seq: int, outcome: str, error_message: str = "", usage: dict[str, Any] | None = None
) -> list[tuple[int, dict[str, Any]]]:
    """The frames that end a run: ``__state__``, then ``__aborted__`` or an error line, then ``__usage__``."""
    frames: list[dict[str, Any]] = [events.state_marker(sort=first_seq)]
    if outcome == Run.Status.ABORTED:
        frames.append(events.aborted(sort=first_seq + 1))
    elif outcome == Run.Status.FAILED:
        frames.append(events.error(sort=first_seq + 1, message=error_message))
    frames.append(events.usage(sort=first_seq + len(frames), **(usage or {})))
    return [(first_seq + index, frame) for index, frame in enumerate(frames)]


def _run_end_locked(
    *,
    run: Run,
    outcome: str,
    bus: EventBus,
    error_message: str = "",
    usage: dict[str, Any] | None = None,
    only_if_stale: bool = False,
) -> bool:
    """End a running run and log its terminal frames; the thread row must be locked by the caller.
    False when the run was no longer running (someone else ended it) or, with ``only_if_stale``, when its heartbeat
    is not stale by the database's clock (its process lives: the UPDATE's condition, so a heartbeat written
    meanwhile counts). A failed run's messages left in process are closed first (:func:`closing_frames`)."""
    running = Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING)
    if only_if_stale:
        running = running.filter(heartbeat_at__lt=stale_before())
    ended = running.update(status=outcome, finished_at=Now())
    if not ended:
        return False
    next_seq = selectors.thread_last_seq(thread_id=run.thread_id) + 1
    frames = []
    if outcome == Run.Status.FAILED:
        logged = selectors.run_frames_after(run_id=run.pk, after_seq=run.first_seq - 1)
        closing = closing_frames([frame.message for frame in logged], error_message=error_message)
        frames = [(next_seq + index, frame) for index, frame in enumerate(closing)]
        next_seq += len(frames)
    frames += terminal_frames(first_seq=next_seq, outcome=outcome, error_message=error_message, usage=usage)
    _log_frames(run=run, frames=frames)
    transaction.on_commit(lambda: _publish(bus, run.thread_id, run.pk, frames))
    return True


def closing_frames(logged: Sequence[dict[str, Any]], *, error_message: str) -> list[dict[str, Any]]:
    """The frames that close the messages a run left in process (``logged`` are its frames): the answer it
    was writing, as far as it got, and each tool call without a result, answered with ``error_message``."""
    frames = []
    for message in events.consolidate(logged):
        if not message.get("isInProcess"):
            continue
        call = message.get("toolCall")
        if call is not None:
            result = json.dumps({"error": error_message or "The tool call did not finish"})
            frames.append({**message, "toolCall": {**call, "result": result}, "isInProcess": False})
        else:
            frames.append({**message, "isDelta": False, "isInProcess": False})
    return frames


def run_end(
    *,
    run: Run,
    outcome: str,
    bus: EventBus,
    error_message: str = "",
    usage: dict[str, Any] | None = None,
    only_if_stale: bool = False,
) -> bool:
    """End a run (completed, failed or aborted) with its terminal frames, in one short transaction; with
    ``only_if_stale``, only if its heartbeat is stale by the database's clock (its process died)."""
    with transaction.atomic():
        if _thread_lock(run.thread_id) is None:
            return False  # the thread was deleted (its user expired)
        return _run_end_locked(
            run=run, outcome=outcome, bus=bus, error_message=error_message, usage=usage, only_if_stale=only_if_stale
        )


def heartbeat_stale(heartbeat_at: dt.datetime, now: dt.datetime) -> bool:
    """Whether a heartbeat at ``heartbeat_at`` is stale at ``now``, both read on one clock (``selectors.run_health``
    gives a heartbeat on this process's clock). A hint for polling; a run is ended only by the database's judgement
    (:func:`run_fail_if_stale`)."""
    return heartbeat_at < now - STALE_AFTER


def run_fail_if_stale(*, run_id: int, thread_id: int, bus: EventBus | None = None) -> bool:
    """Mark a running run whose process died as failed (its responses end, the thread takes messages), if its
    heartbeat is stale by the database's clock; under the thread's lock, in one conditional UPDATE."""
    with transaction.atomic():
        _thread_lock(thread_id)
        run = Run.objects.filter(pk=run_id, status=Run.Status.RUNNING, heartbeat_at__lt=stale_before()).first()
        if run is None:
            return False
        return _run_end_locked(
            run=run,
            outcome=Run.Status.FAILED,
            bus=bus or bus_for_settings(),
            error_message=RUN_LOST_MESSAGE,
            only_if_stale=True,
        )


def runs_fail_stale() -> int:
    """Fail every run whose heartbeat is stale by the database's clock; returns how many were failed."""
    return sum(
        run_fail_if_stale(run_id=run_id, thread_id=thread_id)
        for run_id, thread_id in selectors.stale_runs(stale_after=STALE_AFTER)
    )


def run_frame_append(*, run: Run, seq: int, frame: dict[str, Any], bus: EventBus) -> None:
    """Log one frame of a running run (autocommit: the run is the thread's only writer) and publish it."""
    _EVENT_INSERT.create(thread_id=run.thread_id, run=run, seq=seq, message=frame)
    _publish(bus, run.thread_id, run.pk, [(seq, frame)])


def run_claim(*, run: Run, worker: str) -> bool:
    """Take a running run for execution by ``worker`` (its heartbeat the database's now); False when another worker
    has it already."""
    return bool(
        Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING, worker="").update(worker=worker, heartbeat_at=Now())
    )


def run_heartbeat(*, run: Run) -> bool | None:
    """Refresh a run's heartbeat to the database's now; returns whether an abort was requested, None when it no
    longer runs."""
    alive = Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING).update(heartbeat_at=Now())
    if not alive:
        return None
    return Run.objects.filter(pk=run.pk).values_list("abort_requested", flat=True).first()


def runs_heartbeat_queued(*, run_ids: Sequence[int]) -> int:
    """Refresh the heartbeat of runs a process has queued for execution (not claimed yet) to the database's now;
    returns how many."""
    return Run.objects.filter(pk__in=list(run_ids), status=Run.Status.RUNNING, worker="").update(heartbeat_at=Now())


def _generated_message_id(thread: Thread) -> str:
    """A ``<ms>-message`` id not yet used in the thread (for a request without ``messageId``)."""
    stamp = int(time.time() * 1000)
    while _RUN_OF_MESSAGE.first(thread.pk, f"{stamp}-message") is not None:
        stamp += 1
    return f"{stamp}-message"


def _plan_for_run(thread: Thread, run: Run, first_line_sent: threading.Event | None = None) -> StreamPlan:
    return StreamPlan(
        thread_id=thread.pk,
        chat_id=thread.chat_id,
        run_id=run.pk,
        from_seq=run.first_seq,
        is_streaming=run.status == Run.Status.RUNNING,
        first_line_sent=first_line_sent,
    )
