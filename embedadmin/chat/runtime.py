"""Executing runs outside the HTTP request.

:class:`ChatRuntime` is a thread pool in the web process; each run gets an event loop of its own in a
pool thread (:meth:`ChatRuntime.execute`). A run depends only on its row, the database and the bus, so
another process could execute it as well.

A :class:`RunExecution` drives the agent's provider, logs every frame to the thread's event log (and
publishes it), keeps a heartbeat (the run's lease: renewed every ``heartbeat_seconds`` from a thread of its
own, so a busy event loop or a slow frame write never lets it lapse), and ends the run with its terminal
frames. An abort (published on the
thread's channel, and recorded on the run for the heartbeat to see) cancels the provider at once, even
in the middle of a slow tool call, and keeps what was produced; the statement a tool call is running in the data
source is cancelled with it (the run's :class:`~embedadmin.semantic.sources.base.CancelScope`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

from django.db import connection

from embedadmin.accounts.services import locale_check
from embedadmin.chat import events, selectors, services
from embedadmin.chat.bus import EventBus, bus_for_settings, thread_channel
from embedadmin.chat.models import Agent, Run
from embedadmin.chat.providers import provider_for
from embedadmin.chat.providers.analyst.formatting import DEFAULT_LOCALE
from embedadmin.chat.providers.base import (
    CancelToken,
    ContentDelta,
    ContextFilter,
    ModelUsage,
    Provider,
    ProviderRequest,
    ProviderUnavailable,
    Suggestions,
    ThinkingDelta,
)
from embedadmin.chat.tools import ToolContext, ToolRegistry, date_always_set, default_tools, dimension_values
from embedadmin.core.errors import ApiError, BadRequest
from embedadmin.semantic.errors import QueryError
from embedadmin.semantic.query.dates import canonical_timezone
from embedadmin.semantic.serving.routing import viewer_context
from embedadmin.semantic.sources.base import CancelScope

logger = logging.getLogger(__name__)

RUNTIME_WORKERS = 16
# How long a new run waits for its response's first line before it starts anyway (the response may
# never start: the client went away).
START_GATE_SECONDS = 0.1
T = TypeVar("T")


class RunExecution:
    """One run on one event loop. Database calls go to a thread of their own, which hands its connection
    back to the pool after each call: a run waits on providers and tools most of the time, and holding a
    connection meanwhile let fifty concurrent runs exhaust the pool."""

    def __init__(
        self,
        run: Run,
        *,
        bus: EventBus,
        provider: Provider,
        tools: ToolRegistry,
        heartbeat_seconds: float,
    ) -> None:
        self.run = run
        self.bus = bus
        self.provider = provider
        self.tools = tools
        self.heartbeat_seconds = heartbeat_seconds
        self.cancel = CancelToken()
        self.statements = CancelScope()  # the data-source statements of the run's tool calls and lookups
        self.lost = False  # someone else ended the run (stale recovery): write nothing more
        self._beating = threading.Event()  # set when the heartbeat must stop
        self._next_seq = run.first_seq + 1
        self._sorts: dict[str, int] = {}
        self._tool_calls = 0
        self._db_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"chat-run-{run.pk}-db")
        self._models: list[str] = []
        self._usage = {"llm_calls": 0, "input_tokens": 0, "output_tokens": 0}
        agent = run.thread.agent
        context = run.query_context
        self.tool_context = ToolContext(
            account_id=agent.account_id,
            deployment_id=agent.deployment_id,
            query_context=viewer_context(
                deployment=agent.deployment,
                security_context=context.get("securityContext") or {},
                groups=list(context.get("groups") or []),
                user_attributes=context.get("userAttributes") or {},
            ),
            branch_name=context.get("branchName", ""),
            is_default_branch=context.get("isDefaultBranch", True),
            cancel=self.statements,
        )

    async def _db(self, function: Callable[..., T], **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._db_thread, functools.partial(releasing_connection, function, **kwargs))

    async def _append(self, message_id: str, build: Callable[[int], events.Frame]) -> None:
        seq = self._next_seq
        self._next_seq += 1
        frame = build(self._sorts.setdefault(message_id, seq))
        await self._db(services.run_frame_append, run=self.run, seq=seq, frame=frame, bus=self.bus)

    async def _off_loop(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` on the executor, its database connection released after, so the loop never blocks."""
        return await asyncio.get_running_loop().run_in_executor(None, releasing_connection, function, *args)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        """What providers call: log the call, run the tool off the loop, log and return its result."""
        self._tool_calls += 1
        tool_id = f"{self.run.message_id}-tool-{self._tool_calls}"
        input_json = json.dumps(arguments)

        def frame(result: str | None) -> Callable[[int], events.Frame]:
            return lambda sort: events.tool_call(
                message_id=tool_id, sort=sort, name=name, input_json=input_json, result_json=result
            )

        await self._append(tool_id, frame(None))
        result = await self._off_loop(self.tools.call, self.tool_context, name, arguments)
        await self._append(tool_id, frame(result))
        return result

    async def lookup_values(self, cube: str, dimension: str, candidates: Sequence[str]) -> list[str]:
        """What providers call to find values in the data, off the loop, for the run's user; nothing is logged."""
        return await self._off_loop(dimension_values, self.tool_context, cube, dimension, candidates)

    async def dates_always_set(self, cube: str, measure: str, dimension: str, zero_is_none: bool) -> bool:
        """What providers call to learn whether every row of a measure has a date, off the loop, unlogged."""
        check = functools.partial(date_always_set, zero_is_none=zero_is_none)
        return await self._off_loop(check, self.tool_context, cube, measure, dimension)

    async def search_model(self, search_query: str) -> dict[str, Any]:
        """What providers call to search the data model with the ``serviceMeta`` tool, off the loop, unlogged."""
        arguments = {"searchQuery": search_query}
        found = await self._off_loop(self.tools.call, self.tool_context, "serviceMeta", arguments)
        return dict(json.loads(found))

    async def _produce(self) -> None:
        """Run the provider to the end and log the final answer."""
        answer_id = f"{self.run.message_id}-answer"
        content: list[str] = []
        thinking: list[str] = []
        offered: list[str] = []
        history = await self._db(selectors.thread_messages, thread_id=self.run.thread_id, before_seq=self.run.first_seq)
        dashboard = (self.run.context or {}).get("dashboard") or {}
        request = ProviderRequest(
            question=self.run.input,
            history=history,
            tool_specs=self.tools.specs(),
            call_tool=self.call_tool,
            cancel=self.cancel,
            timezone=viewer_timezone(self.run.context, self.tool_context.query_context.security_context),
            locale=viewer_locale(self.run.context, self.tool_context.query_context.security_context),
            lookup_values=self.lookup_values,
            dates_always_set=self.dates_always_set,
            search_model=self.search_model,
            dashboard=dashboard.get("publicId", ""),
            context_filters=[ContextFilter.from_json(f) for f in dashboard.get("filters", [])],
        )
        async for event in self.provider.stream(request):
            if isinstance(event, ThinkingDelta | ContentDelta):
                is_thinking = isinstance(event, ThinkingDelta)
                (thinking if is_thinking else content).append(event.text)
                piece = {"thinking" if is_thinking else "content": event.text}

                def delta(s: int, p: dict[str, str] = piece) -> events.Frame:
                    return events.assistant_delta(message_id=answer_id, sort=s, **p)

                await self._append(answer_id, delta)
            elif isinstance(event, Suggestions):
                offered = list(event.questions)
            elif isinstance(event, ModelUsage):
                self._models.append(event.model)
                self._usage["llm_calls"] += 1
                self._usage["input_tokens"] += event.input_tokens
                self._usage["output_tokens"] += event.output_tokens
        await self._append(
            answer_id,
            lambda s: events.assistant_final(
                message_id=answer_id,
                sort=s,
                content="".join(content),
                thinking="".join(thinking),
                suggestions=offered,
            ),
        )

    def _heartbeat(self, loop: asyncio.AbstractEventLoop) -> None:
        """On a thread of its own: renew the run's lease every ``heartbeat_seconds`` until the run ends; notice an
        abort recorded on the run, or that someone else ended it (it was taken for dead), and cancel the run."""
        while True:
            try:
                state = releasing_connection(services.run_heartbeat, run=self.run)
            except Exception:
                logger.warning("Chat run %s could not renew its heartbeat", self.run.pk, exc_info=True)
                state = False
            if state is None:
                self.lost = True
            if state is not False:
                with contextlib.suppress(RuntimeError):  # the run's loop is closed: it ended meanwhile
                    loop.call_soon_threadsafe(self.cancel.cancel)
                return
            if self._beating.wait(self.heartbeat_seconds):
                return

    async def _watch(self, subscription) -> None:
        """Cancel on an abort published for this run."""
        while True:
            note = await subscription.get(timeout=60.0)
            if note and note.get("kind") == "abort" and note.get("run") == self.run.pk:
                self.cancel.cancel()
                return

    async def execute(self) -> None:
        heartbeat = threading.Thread(
            target=self._heartbeat,
            args=(asyncio.get_running_loop(),),
            name=f"chat-run-{self.run.pk}-heartbeat",
            daemon=True,
        )
        heartbeat.start()
        try:
            async with self.bus.subscribe(thread_channel(self.run.thread_id)) as subscription:
                helpers = [asyncio.create_task(self._watch(subscription))]
                work = asyncio.create_task(self._produce())
                stop = asyncio.create_task(self.cancel.wait())
                try:
                    await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
                    if self.cancel.cancelled:
                        self.statements.cancel()  # at once: the tool call's thread is not waited for
                finally:
                    for task in [*helpers, stop]:
                        task.cancel()
                    if not work.done():
                        work.cancel()
                    await asyncio.gather(work, stop, *helpers, return_exceptions=True)
            await self._end(work)
        finally:
            self._beating.set()
            # Waits for a database call still running (a cancelled one runs to its end) before the thread goes.
            await self._db(lambda: None)
            self._db_thread.shutdown(wait=False)

    async def _end(self, work: asyncio.Task) -> None:
        if self.lost:
            return
        error_message = ""
        if work.cancelled():
            outcome = Run.Status.ABORTED
        elif (error := work.exception()) is not None:
            outcome = Run.Status.FAILED
            error_message = _failure_message(error)
        else:
            outcome = Run.Status.COMPLETED
        usage = {"models": self._models, **self._usage}
        await self._db(
            services.run_end, run=self.run, outcome=outcome, bus=self.bus, error_message=error_message, usage=usage
        )


def viewer_timezone(context: dict[str, Any] | None, security_context: dict[str, Any] | None) -> str:
    """The time zone the viewer's dates are read and bucketed in: the turn's ``context.timezone`` (the one the embed
    page's tiles query in, checked when the request was read), else the ``timezone`` claim of their security
    context, else an embed session's own (``embed.settings.timezone``), else UTC. Only ever a known zone."""
    embed = (security_context or {}).get("embed")
    settings = embed.get("settings") if isinstance(embed, dict) else None
    given = (
        (context or {}).get("timezone"),
        (security_context or {}).get("timezone"),
        settings.get("timezone") if isinstance(settings, dict) else None,
    )
    for zone in given:
        if isinstance(zone, str):
            try:
                return canonical_timezone(zone)
            except QueryError:  # an unknown zone: the next one
                continue
    return "UTC"


def viewer_locale(context: dict[str, Any] | None, security_context: dict[str, Any] | None) -> str:
    """The locale the viewer reads the answer's numbers and dates in: the turn's ``context.locale`` (the embed page's,
    checked when the request was read), else an embed session's own (its token's ``embed.settings.locale``), else
    US English. Only ever a checked language tag: it names a format, never a grant."""
    embed = (security_context or {}).get("embed")
    settings = embed.get("settings") if isinstance(embed, dict) else None
    for given in ((context or {}).get("locale"), settings.get("locale") if isinstance(settings, dict) else None):
        try:
            return locale_check(given)
        except BadRequest:
            continue
    return DEFAULT_LOCALE


def releasing_connection(function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Call ``function``, then give the calling thread's database connection back (to the pool on
    PostgreSQL); ``connection`` is per thread."""
    try:
        return function(*args, **kwargs)
    finally:
        connection.close()


def agent_provider(agent: Agent) -> Provider:
    """The provider of ``agent``, handed its API key in clear: providers read no secret themselves."""
    return provider_for(agent, api_key=services.agent_api_key(agent=agent))


def _failure_message(exc: BaseException) -> str:
    if isinstance(exc, ProviderUnavailable):
        return str(exc)
    if isinstance(exc, ApiError):
        return exc.message
    logger.error("Chat run failed", exc_info=exc)
    return "The agent failed to answer"


class ChatRuntime:
    """Executes runs in a pool of threads of this process.

    ``provider_for`` and ``tools_for`` pick what a run's agent uses; they are attributes so that a
    process (or a test) can plug in others. A run waiting for a thread of the pool is this process's too: its
    heartbeat is renewed with the others' queued here (one statement every ``heartbeat_seconds``), so a busy
    process's queue is never taken for dead.
    """

    def __init__(
        self,
        *,
        bus: EventBus | None = None,
        max_workers: int = RUNTIME_WORKERS,
        heartbeat_seconds: float = services.HEARTBEAT_SECONDS,
        worker_name: str | None = None,
    ) -> None:
        self.bus = bus or bus_for_settings()
        self.heartbeat_seconds = heartbeat_seconds
        self.worker_name = worker_name or f"{socket.gethostname()}:{os.getpid()}"
        self.provider_for: Callable[[Agent], Provider] = agent_provider
        self.tools_for: Callable[[Agent], ToolRegistry] = lambda agent: default_tools()
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="chat-run")
        self._pending: set[Future] = set()
        self._pending_lock = threading.Lock()
        self._queued: set[int] = set()  # runs submitted whose execution has not started
        self._queue_beat: threading.Thread | None = None

    def submit(self, run_id: int, *, after: threading.Event | None = None) -> None:
        """Execute a run in the pool; with ``after``, once it is set (or ``START_GATE_SECONDS`` passed)."""
        with self._pending_lock:
            self._queued.add(run_id)
            if self._queue_beat is None or not self._queue_beat.is_alive():
                self._queue_beat = threading.Thread(target=self._beat_queued, name="chat-run-queue", daemon=True)
                self._queue_beat.start()
        future = self._pool.submit(self._execute_after, run_id, after)
        with self._pending_lock:
            self._pending.add(future)
        future.add_done_callback(self._done)

    def _beat_queued(self) -> None:
        """Renew the heartbeat of the runs waiting in the pool's queue while there are any."""
        while True:
            time.sleep(self.heartbeat_seconds)
            with self._pending_lock:
                queued = list(self._queued)
                if not queued:
                    self._queue_beat = None
                    return
            try:
                releasing_connection(services.runs_heartbeat_queued, run_ids=queued)
            except Exception:
                logger.warning("Queued chat runs could not renew their heartbeat", exc_info=True)

    def _done(self, future: Future) -> None:
        with self._pending_lock:
            self._pending.discard(future)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait for the runs submitted so far to end (graceful shutdown, tests); False on timeout."""
        with self._pending_lock:
            pending = list(self._pending)
        _, not_done = wait(pending, timeout=timeout)
        return not not_done

    def _execute_after(self, run_id: int, after: threading.Event | None) -> None:
        if after is not None:
            after.wait(START_GATE_SECONDS)
        try:
            self.execute(run_id)
        finally:
            with self._pending_lock:
                self._queued.discard(run_id)

    def execute(self, run_id: int) -> None:
        """Execute one run to its end (in the calling thread); does nothing if it is not ours to run."""
        try:
            run = selectors.run_for_execution(run_id=run_id)
            if run is None or not services.run_claim(run=run, worker=self.worker_name):
                return
            agent = run.thread.agent
            try:
                provider = self.provider_for(agent)
            except ProviderUnavailable as exc:
                services.run_end(run=run, outcome=Run.Status.FAILED, bus=self.bus, error_message=str(exc))
                return
            execution = RunExecution(
                run,
                bus=self.bus,
                provider=provider,
                tools=self.tools_for(agent),
                heartbeat_seconds=self.heartbeat_seconds,
            )
            connection.close()  # the run's own thread does its database work; release this one meanwhile
            asyncio.run(execution.execute())
        except Exception:
            logger.exception("Chat run %s could not be executed", run_id)
        finally:
            connection.close()

    def shutdown(self, *, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait)


_runtimes: dict[int, ChatRuntime] = {}
_runtimes_lock = threading.Lock()


def get_runtime() -> ChatRuntime:
    """The process's runtime, on the process's bus."""
    bus = bus_for_settings()
    with _runtimes_lock:
        runtime = _runtimes.get(id(bus))
        if runtime is None:
            runtime = _runtimes[id(bus)] = ChatRuntime(bus=bus)
        return runtime
