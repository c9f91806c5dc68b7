"""The Chat API's two requests as state changes: open a stream (spec 4.4: a new or existing thread, its
state or a new run) and abort the thread's run (spec 4.5)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from embedadmin.chat import selectors
from embedadmin.chat.bus import EventBus, bus_for_settings, thread_channel
from embedadmin.chat.models import Agent, ChatUser, Run, Thread
from embedadmin.chat.services.runs import (
    RunSubmitter,
    StreamPlan,
    run_end,
    run_fail_if_stale,
    run_start,
)
from embedadmin.chat.services.users import query_context_of
from embedadmin.core.errors import BadRequest, Forbidden
from embedadmin.core.prepared import PreparedInsert

_THREAD_INSERT: PreparedInsert[Thread] = PreparedInsert(Thread)


@dataclass(frozen=True)
class StreamRequest:
    """A parsed stream-chat-state body (without ``sessionSettings``)."""

    input: str | None = None
    chat_id: str | None = None
    message_id: str | None = None
    branch_name: str | None = None
    is_default_branch: bool | None = None
    # What the user is looking at ({"dashboard": {"publicId", "filters"}}, or {}), stored with the run as JSON.
    context: dict[str, Any] = field(default_factory=dict)


def thread_create(*, agent: Agent, owner: ChatUser, branch_name: str | None, is_default_branch: bool | None) -> Thread:
    """A new thread of ``agent`` for ``owner``; without a branch name it is on the default branch."""
    return _THREAD_INSERT.create(
        chat_id=str(uuid.uuid4()),
        agent=agent,
        owner=owner,
        branch_name=branch_name or "",
        is_default_branch=is_default_branch if is_default_branch is not None else not branch_name,
    )


def _thread_branch_update(*, thread: Thread, branch_name: str | None, is_default_branch: bool | None) -> None:
    if branch_name is None and is_default_branch is None:
        return
    new_name = thread.branch_name if branch_name is None else branch_name
    default = is_default_branch if is_default_branch is not None else not new_name
    if (new_name, default) != (thread.branch_name, thread.is_default_branch):
        Thread.objects.filter(pk=thread.pk).update(branch_name=new_name, is_default_branch=default)
        thread.branch_name, thread.is_default_branch = new_name, default


def chat_stream_open(
    *,
    agent: Agent,
    user: ChatUser,
    request: StreamRequest,
    runtime: RunSubmitter,
    bus: EventBus | None = None,
) -> StreamPlan:
    """Decide what a stream-chat-state request streams (spec 4.4).

    ``chatId`` omitted starts a thread; given, it must be a thread of this agent the user owns (404
    otherwise). ``input`` omitted returns the thread's current state; given, a run starts (or the run of
    the same ``messageId`` is re-attached to), which ``runtime`` executes.
    """
    bus = bus or bus_for_settings()
    # One transaction: a new thread, the run and the user's message are accepted together or not at all, so
    # a request that fails leaves nothing behind. The runtime is handed the run once it is committed (and runs
    # it whether or not the bus is up: the bus never raises).
    with transaction.atomic():
        return _stream_open(agent=agent, user=user, request=request, runtime=runtime, bus=bus)


def _stream_open(
    *, agent: Agent, user: ChatUser, request: StreamRequest, runtime: RunSubmitter, bus: EventBus
) -> StreamPlan:
    if request.chat_id is None:
        if request.input is None:
            raise BadRequest("input is required when chatId is omitted")
        thread = thread_create(
            agent=agent, owner=user, branch_name=request.branch_name, is_default_branch=request.is_default_branch
        )
    else:
        thread = selectors.thread_of_owner(agent=agent, owner=user, chat_id=request.chat_id)
        _thread_branch_update(
            thread=thread, branch_name=request.branch_name, is_default_branch=request.is_default_branch
        )
    if request.input is None:
        running = selectors.thread_running_run(thread_id=thread.pk)
        if running is not None and run_fail_if_stale(run_id=running.pk, thread_id=thread.pk, bus=bus):
            running = None  # its process died: the database's clock says so
        return StreamPlan(thread_id=thread.pk, chat_id=thread.chat_id, is_streaming=running is not None)
    query_context = {
        **query_context_of(user),
        "branchName": thread.branch_name,
        "isDefaultBranch": thread.is_default_branch,
    }
    return run_start(
        account_id=agent.account_id,
        thread=thread,
        question=request.input,
        message_id=request.message_id,
        query_context=query_context,
        context=request.context,
        bus=bus,
        runtime=runtime,
    )


def chat_abort(
    *, agent: Agent, chat_id: str, requester: ChatUser | None, account_wide: bool, bus: EventBus | None = None
) -> None:
    """Abort the thread's running run (spec 4.5): 404 unknown ``chatId``, 403 not the owner.

    ``account_wide`` is an admin API key without ``sessionSettings``: it acts for the whole account. The
    request is recorded on the run (the executing process also checks it at each heartbeat) and
    published, so the process running it stops within a moment; a run whose process died is ended here.
    """
    bus = bus or bus_for_settings()
    thread = selectors.thread_get(agent=agent, chat_id=chat_id)
    if not account_wide and (requester is None or thread.owner_id != requester.pk):
        raise Forbidden("You do not own this chat thread")
    running = selectors.thread_running_run(thread_id=thread.pk)
    if running is None:
        return
    Run.objects.filter(pk=running.pk, status=Run.Status.RUNNING).update(abort_requested=True)
    if run_end(run=running, outcome=Run.Status.ABORTED, bus=bus, only_if_stale=True):
        return  # its process died (by the database's clock): nobody else would end it
    bus.publish(thread_channel(thread.pk), {"kind": "abort", "run": running.pk})
