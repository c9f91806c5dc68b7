"""State changes of the Chat API: agents, chat users within the non-ephemeral limit, threads and runs,
the event log, abort, stale-run recovery, expiry of ephemeral users and the usage counters.

Locks are short: starting or finishing a run locks its thread row for the few statements that decide
the thread's state (one running run, dense ``seq``); nothing is held while a response streams.
"""

from __future__ import annotations

import datetime as dt
import secrets
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from embedadmin.accounts.models import Account, Deployment
from embedadmin.accounts.services import NON_EPHEMERAL_CHAT_USERS, quota_recount, quota_release, quota_reserve
from embedadmin.chat import events, selectors
from embedadmin.chat.authentication import ChatCredential
from embedadmin.chat.bus import EventBus, bus_for_settings, thread_channel
from embedadmin.chat.models import AccountUsageDay, Agent, ChatUser, Run, Thread, ThreadEvent
from embedadmin.core import credentials
from embedadmin.core.errors import BadRequest, Conflict, Forbidden, NotFound
from embedadmin.core.prepared import PreparedInsert, PreparedQuery
from embedadmin.directory import selectors as directory_selectors
from embedadmin.directory import services as directory

DEFAULT_EPHEMERAL_TTL_SECONDS = 7 * 24 * 3600
# A running run refreshes its heartbeat this often; one silent for STALE_AFTER lost its process.
HEARTBEAT_SECONDS = 5.0
STALE_AFTER = dt.timedelta(seconds=30)
EXPIRE_BATCH_SIZE = 500
STREAMING_IN_PROGRESS = "Streaming for thread is in progress"
RUN_LOST_MESSAGE = "The agent stopped unexpectedly; send the message again"


# --- agents -----------------------------------------------------------------------------------------


def agent_create(
    *,
    account: Account,
    deployment: Deployment,
    name: str,
    provider: str = Agent.Provider.BUILTIN,
    base_url: str = "",
    model: str = "",
    api_key: str = "",
) -> Agent:
    """Create an agent of ``account`` over ``deployment``; its ``agentId`` is random and public."""
    if deployment.account_id != account.pk:
        raise NotFound(f"Deployment {deployment.pk} not found")
    if provider not in Agent.Provider.values:
        raise BadRequest(f"provider must be one of {', '.join(Agent.Provider.values)}")
    if provider == Agent.Provider.OPENAI and not (base_url and model):
        raise BadRequest("An OpenAI-compatible agent needs a base URL and a model")
    return Agent.objects.create(
        account=account,
        deployment=deployment,
        name=name.strip() or "Analyst",
        public_id=secrets.token_hex(8),
        provider=provider,
        base_url=base_url,
        model=model,
        api_key_encrypted=credentials.encrypt_secret(api_key) if api_key else "",
    )


def agent_api_key(*, agent: Agent) -> str:
    """The agent's provider API key in clear ('' when none)."""
    return credentials.decrypt_secret(agent.api_key_encrypted) if agent.api_key_encrypted else ""


# --- chat users -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChatIdentity:
    """Who a request speaks for and what they query with. ``None`` keeps what was stored."""

    external_id: str | None = None
    internal_user: AbstractBaseUser | None = None
    email: str | None = None
    groups: list[str] | None = None
    user_attributes: dict[str, Any] | None = None
    security_context: dict[str, Any] | None = None
    is_ephemeral: bool | None = None
    ttl_seconds: int | None = None


@dataclass(frozen=True)
class SessionSettingsInput:
    """A parsed ``sessionSettings``; ``None`` means "not sent"."""

    external_id: str | None = None
    internal_id: str | None = None
    email: str | None = None
    user_attributes: list[tuple[str, Any]] | None = None
    groups: list[str] | None = None
    security_context: dict[str, Any] | None = None
    is_ephemeral: bool | None = None
    ephemeral_ttl_seconds: int | None = None


def internal_user_of_account(*, account: Account, internal_id: str) -> AbstractBaseUser | None:
    """The active internal user of ``account`` whose username or email is ``internal_id``."""
    return (
        get_user_model()
        .objects.filter(Q(username=internal_id) | Q(email__iexact=internal_id), membership__account=account)
        .filter(is_active=True)
        .order_by("pk")
        .first()
    )


def identity_from_session_settings(*, account: Account, data: SessionSettingsInput) -> ChatIdentity:
    """The identity an API-key request describes: its user attributes are typed by the account's
    tenant-wide catalog (unknown names are refused) and missing ones take their defaults."""
    if data.internal_id is not None:
        user = internal_user_of_account(account=account, internal_id=data.internal_id)
        if user is None:
            raise BadRequest(f"sessionSettings.internalId: no internal user {data.internal_id!r} in this account")
        return ChatIdentity(
            internal_user=user,
            email=user.email,
            groups=directory_selectors.internal_user_group_names(account=account, user_id=user.pk),
            user_attributes={},
            security_context={},
            is_ephemeral=data.is_ephemeral,
            ttl_seconds=data.ephemeral_ttl_seconds,
        )
    attributes = None
    if data.user_attributes is not None:
        definitions = directory_selectors.attribute_definitions_in_scope(account=account, embed_tenant=None)
        named = directory_selectors.attribute_definitions_resolve(
            definitions=definitions, names=[name for name, _ in data.user_attributes]
        )
        checked = directory.attribute_values_check(definitions=named, values=data.user_attributes)
        attributes = directory_selectors.attribute_claims(
            definitions=definitions, values={definition.pk: value for definition, value in checked}
        )
    return ChatIdentity(
        external_id=data.external_id,
        email=data.email,
        groups=data.groups,
        user_attributes=attributes,
        security_context=data.security_context,
        is_ephemeral=data.is_ephemeral,
        ttl_seconds=data.ephemeral_ttl_seconds,
    )


def _expiry(now: dt.datetime, ttl_seconds: int | None) -> dt.datetime:
    return now + dt.timedelta(seconds=ttl_seconds or DEFAULT_EPHEMERAL_TTL_SECONDS)


def _chat_user_create(*, account: Account, identity: ChatIdentity, now: dt.datetime) -> ChatUser | None:
    """Insert the user (reserving a place when non-ephemeral); None when a concurrent request won."""
    ephemeral = identity.is_ephemeral is not False
    try:
        with transaction.atomic():
            user = ChatUser.objects.create(
                account=account,
                external_id=identity.external_id or "",
                internal_user=identity.internal_user,
                email=identity.email or "",
                groups=identity.groups or [],
                user_attributes=identity.user_attributes or {},
                security_context=identity.security_context or {},
                is_ephemeral=ephemeral,
                expires_at=_expiry(now, identity.ttl_seconds) if ephemeral else None,
            )
            if not ephemeral:
                quota_reserve(account_id=account.pk, quota=NON_EPHEMERAL_CHAT_USERS)
            return user
    except IntegrityError:
        return None


def _chat_user_update(*, user: ChatUser, identity: ChatIdentity, now: dt.datetime) -> ChatUser:
    """Refresh the snapshot and apply an explicit change of kind (within the limit) or a shorter TTL."""
    updates: dict[str, Any] = {
        field: value
        for field, value in (
            ("email", identity.email),
            ("groups", identity.groups),
            ("user_attributes", identity.user_attributes),
            ("security_context", identity.security_context),
        )
        if value is not None and getattr(user, field) != value
    }
    with transaction.atomic():
        if identity.is_ephemeral is False and user.is_ephemeral:
            quota_reserve(account_id=user.account_id, quota=NON_EPHEMERAL_CHAT_USERS)
            updates.update(is_ephemeral=False, expires_at=None)
        elif identity.is_ephemeral is True and not user.is_ephemeral:
            quota_release(account_id=user.account_id, quota=NON_EPHEMERAL_CHAT_USERS)
            updates.update(is_ephemeral=True, expires_at=_expiry(now, identity.ttl_seconds))
        elif user.is_ephemeral and identity.ttl_seconds is not None:
            # Never outlive a TTL once given: a shorter one moves the expiry closer, a longer one does not.
            updates["expires_at"] = min(user.expires_at, _expiry(now, identity.ttl_seconds))
        if updates:
            updates["updated_at"] = now
            ChatUser.objects.filter(pk=user.pk).update(**updates)
    for field, value in updates.items():
        setattr(user, field, value)
    return user


def chat_user_upsert(*, account: Account, identity: ChatIdentity, now: dt.datetime | None = None) -> ChatUser:
    """Find or create the chat user of ``identity``.

    New users are ephemeral unless ``is_ephemeral`` is False, which takes a place under the account's
    non-ephemeral limit in the same transaction as the insert. An ephemeral user already past its expiry
    is deleted (with its threads) and created afresh: it never outlives its TTL, even when the expiry
    worker is late.
    """
    now = now or timezone.now()
    for _ in range(3):
        user = selectors.chat_user_find(
            account=account, external_id=identity.external_id, internal_user=identity.internal_user
        )
        if user is not None and user.is_ephemeral and user.expires_at <= now:
            ChatUser.objects.filter(pk=user.pk, is_ephemeral=True, expires_at__lte=now).delete()
            user = None
        if user is None:
            user = _chat_user_create(account=account, identity=identity, now=now)
            if user is not None:
                return user
            continue  # created concurrently: read it and update it
        user.account = account
        return _chat_user_update(user=user, identity=identity, now=now)
    raise Conflict("The chat user is being changed by another request; try again")


def query_context_of(user: ChatUser) -> dict[str, Any]:
    """What the agent queries with for ``user`` (stored on each run, so any process can rebuild it)."""
    return {"securityContext": user.security_context, "groups": user.groups, "userAttributes": user.user_attributes}


# --- threads and runs -------------------------------------------------------------------------------


@dataclass(frozen=True)
class StreamRequest:
    """A parsed stream-chat-state body (without ``sessionSettings``)."""

    input: str | None = None
    chat_id: str | None = None
    message_id: str | None = None
    branch_name: str | None = None
    is_default_branch: bool | None = None


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
    *, run: Run, outcome: str, now: dt.datetime, bus: EventBus, error_message: str = "", usage: dict | None = None
) -> bool:
    """End a running run and log its terminal frames; the thread row must be locked by the caller.
    False when the run was no longer running (someone else ended it)."""
    ended = Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING).update(status=outcome, finished_at=now)
    if not ended:
        return False
    frames = terminal_frames(
        first_seq=selectors.thread_last_seq(thread_id=run.thread_id) + 1,
        outcome=outcome,
        error_message=error_message,
        usage=usage,
    )
    _log_frames(run=run, frames=frames)
    transaction.on_commit(lambda: _publish(bus, run.thread_id, run.pk, frames))
    return True


def run_end(
    *,
    run: Run,
    outcome: str,
    bus: EventBus,
    error_message: str = "",
    usage: dict[str, Any] | None = None,
    now: dt.datetime | None = None,
) -> bool:
    """End a run (completed, failed or aborted) with its terminal frames, in one short transaction."""
    with transaction.atomic():
        if not _thread_lock(run.thread_id):
            return False  # the thread was deleted (its user expired)
        return _run_end_locked(
            run=run, outcome=outcome, now=now or timezone.now(), bus=bus, error_message=error_message, usage=usage
        )


_THREAD_INSERT: PreparedInsert[Thread] = PreparedInsert(Thread)
_RUN_INSERT: PreparedInsert[Run] = PreparedInsert(Run)
_EVENT_INSERT: PreparedInsert[ThreadEvent] = PreparedInsert(ThreadEvent)
_THREAD_LOCK = PreparedQuery(
    Thread,
    lambda thread_id: Thread.objects.select_for_update().filter(pk=thread_id).order_by().values_list("pk"),
    sentinels=(-9_000_001,),
)
_RUN_OF_MESSAGE: PreparedQuery[Run] = PreparedQuery(
    Run,
    lambda thread_id, message_id: Run.objects.filter(thread_id=thread_id, message_id=message_id).order_by()[:1],
    sentinels=(-9_000_001, "\x00message-id"),
)


def _thread_lock(thread_id: int) -> bool:
    """Lock a thread row until the transaction ends; False when the thread no longer exists."""
    return bool(_THREAD_LOCK.rows(thread_id))


def heartbeat_stale(heartbeat_at: dt.datetime, now: dt.datetime) -> bool:
    """Whether a running run with this heartbeat lost its process."""
    return heartbeat_at < now - STALE_AFTER


def run_fail_if_stale(
    *, run_id: int, thread_id: int, bus: EventBus | None = None, now: dt.datetime | None = None
) -> bool:
    """Mark a running run whose process died as failed (its responses end, the thread takes messages).
    Callers come here once they saw its heartbeat stale; under the thread's lock it is checked again."""
    now = now or timezone.now()
    with transaction.atomic():
        _thread_lock(thread_id)
        run = Run.objects.filter(pk=run_id, status=Run.Status.RUNNING, heartbeat_at__lt=now - STALE_AFTER).first()
        if run is None:
            return False
        return _run_end_locked(
            run=run, outcome=Run.Status.FAILED, now=now, bus=bus or bus_for_settings(), error_message=RUN_LOST_MESSAGE
        )


def runs_fail_stale(*, now: dt.datetime | None = None) -> int:
    """Fail every run whose heartbeat is stale; returns how many were failed."""
    now = now or timezone.now()
    return sum(
        run_fail_if_stale(run_id=run_id, thread_id=thread_id, now=now)
        for run_id, thread_id in selectors.stale_runs(now=now, stale_after=STALE_AFTER)
    )


def run_frame_append(*, run: Run, seq: int, frame: dict[str, Any], bus: EventBus) -> None:
    """Log one frame of a running run (autocommit: the run is the thread's only writer) and publish it."""
    _EVENT_INSERT.create(thread_id=run.thread_id, run=run, seq=seq, message=frame)
    _publish(bus, run.thread_id, run.pk, [(seq, frame)])


def run_claim(*, run: Run, worker: str, now: dt.datetime | None = None) -> bool:
    """Take a running run for execution by ``worker``; False when another worker has it already."""
    return bool(
        Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING, worker="").update(
            worker=worker, heartbeat_at=now or timezone.now()
        )
    )


def run_heartbeat(*, run: Run, now: dt.datetime | None = None) -> bool | None:
    """Refresh a run's heartbeat; returns whether an abort was requested, None when it no longer runs."""
    alive = Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING).update(heartbeat_at=now or timezone.now())
    if not alive:
        return None
    return Run.objects.filter(pk=run.pk).values_list("abort_requested", flat=True).first()


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


def _submit(run_id: int, after: threading.Event | None = None) -> None:
    from embedadmin.chat.runtime import get_runtime  # the runtime imports this module

    get_runtime().submit(run_id, after=after)


def run_start(
    *, thread: Thread, question: str, message_id: str | None, query_context: dict[str, Any], bus: EventBus
) -> StreamPlan:
    """Start answering ``question`` in ``thread``, or re-attach to the run of the same ``message_id``.

    Under a short lock of the thread row: a run with this ``messageId`` is re-attached to (while it
    streams) or replayed (once it ended) and no second answer is produced; another running run refuses
    the message (409 ``Streaming for thread is in progress``) unless its process died. Otherwise the run
    and the user's message are logged, and the run is handed to the runtime once committed.
    """
    now = timezone.now()
    with transaction.atomic():
        _thread_lock(thread.pk)
        if message_id is not None:
            same = _RUN_OF_MESSAGE.first(thread.pk, message_id)
            if same is not None:
                if same.status == Run.Status.RUNNING and heartbeat_stale(same.heartbeat_at, now):
                    _run_end_locked(
                        run=same, outcome=Run.Status.FAILED, now=now, bus=bus, error_message=RUN_LOST_MESSAGE
                    )
                    same.status = Run.Status.FAILED
                return _plan_for_run(thread, same)
        running = selectors.thread_running_run(thread_id=thread.pk)
        if running is not None:
            if not heartbeat_stale(running.heartbeat_at, now):
                raise Conflict(STREAMING_IN_PROGRESS)
            _run_end_locked(run=running, outcome=Run.Status.FAILED, now=now, bus=bus, error_message=RUN_LOST_MESSAGE)
        seq = selectors.thread_last_seq(thread_id=thread.pk) + 1
        run = _RUN_INSERT.create(
            thread=thread,
            message_id=message_id or _generated_message_id(thread),
            input=question,
            query_context=query_context,
            first_seq=seq,
            heartbeat_at=now,
            started_at=now,
        )
        echo = [(seq, events.user_message(message_id=run.message_id, content=question, sort=seq))]
        _log_frames(run=run, frames=echo)
        first_line_sent = threading.Event()
        transaction.on_commit(lambda: (_publish(bus, thread.pk, run.pk, echo), _submit(run.pk, first_line_sent)))
    return _plan_for_run(thread, run, first_line_sent)


def thread_create(*, agent: Agent, owner: ChatUser, branch_name: str | None, is_default_branch: bool | None) -> Thread:
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
    *, agent: Agent, user: ChatUser, request: StreamRequest, bus: EventBus | None = None
) -> StreamPlan:
    """Decide what a stream-chat-state request streams (spec 4.4).

    ``chatId`` omitted starts a thread; given, it must be a thread of this agent the user owns (404
    otherwise). ``input`` omitted returns the thread's current state; given, a run starts (or the run of
    the same ``messageId`` is re-attached to).
    """
    bus = bus or bus_for_settings()
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
        if (
            running is not None
            and heartbeat_stale(running.heartbeat_at, timezone.now())
            and run_fail_if_stale(run_id=running.pk, thread_id=thread.pk, bus=bus)
        ):
            running = None
        return StreamPlan(thread_id=thread.pk, chat_id=thread.chat_id, is_streaming=running is not None)
    query_context = {
        **query_context_of(user),
        "branchName": thread.branch_name,
        "isDefaultBranch": thread.is_default_branch,
    }
    return run_start(
        thread=thread, question=request.input, message_id=request.message_id, query_context=query_context, bus=bus
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
    if heartbeat_stale(running.heartbeat_at, timezone.now()):
        run_end(run=running, outcome=Run.Status.ABORTED, bus=bus)
        return
    bus.publish(thread_channel(thread.pk), {"kind": "abort", "run": running.pk})


# --- workers ----------------------------------------------------------------------------------------


def chat_users_expire(*, now: dt.datetime | None = None, batch_size: int = EXPIRE_BATCH_SIZE) -> int:
    """Delete ephemeral chat users past their expiry, with their threads, in batches; returns how many.

    Each batch locks its rows with ``SKIP LOCKED``, so two workers running at once share the work
    instead of waiting on (or deadlocking over) the same users; running it again deletes nothing more.
    """
    now = now or timezone.now()
    deleted = 0
    while True:
        with transaction.atomic():
            ids = list(
                ChatUser.objects.select_for_update(skip_locked=True)
                .filter(is_ephemeral=True, expires_at__lte=now)
                .order_by("pk")
                .values_list("pk", flat=True)[:batch_size]
            )
            if not ids:
                return deleted
            ChatUser.objects.filter(pk__in=ids).delete()
        deleted += len(ids)


def user_counts_reconcile(*, account: Account, day: dt.date | None = None) -> AccountUsageDay:
    """Recount the account's external and non-ephemeral chat users into its counters, and record the
    day's usage row (the panel reads these)."""
    external = directory.external_user_count_reconcile(account=account)
    non_ephemeral = quota_recount(
        account_id=account.pk,
        quota=NON_EPHEMERAL_CHAT_USERS,
        count=ChatUser.objects.filter(account=account, is_ephemeral=False).count,
    )
    ephemeral = ChatUser.objects.filter(account=account, is_ephemeral=True).count()
    usage, _ = AccountUsageDay.objects.update_or_create(
        account=account,
        day=day or timezone.localdate(),
        defaults={
            "external_users": external,
            "non_ephemeral_chat_users": non_ephemeral,
            "ephemeral_chat_users": ephemeral,
        },
    )
    return usage


# --- requests ---------------------------------------------------------------------------------------


def identity_for_request(
    *, agent: Agent, credential: ChatCredential, session_settings: SessionSettingsInput | None
) -> ChatIdentity:
    """Who a stream request speaks for: the token's claims (``sessionSettings`` ignored), or the
    ``sessionSettings`` an API key must send."""
    if credential.token is not None:
        context = credential.token
        return ChatIdentity(
            external_id=credential.token_external_id,
            email=credential.token_email,
            groups=list(context.groups),
            user_attributes=dict(context.user_attributes),
            security_context=dict(context.payload),
        )
    if session_settings is None:
        raise BadRequest("sessionSettings is required with API key authentication")
    return identity_from_session_settings(account=agent.account, data=session_settings)


def abort_requester(
    *, agent: Agent, credential: ChatCredential, external_id: str | None, internal_id: str | None
) -> tuple[ChatUser | None, bool]:
    """Who asks to abort: the token's user, or the user ``sessionSettings`` names. An API key without
    ``sessionSettings`` acts for the whole account (second value True)."""
    if credential.token is not None:
        return selectors.chat_user_find(account=agent.account, external_id=credential.token_external_id), False
    if internal_id is not None:
        internal_user = internal_user_of_account(account=agent.account, internal_id=internal_id)
        if internal_user is None:
            return None, False
        return selectors.chat_user_find(account=agent.account, internal_user=internal_user), False
    if external_id is not None:
        return selectors.chat_user_find(account=agent.account, external_id=external_id), False
    return None, True
