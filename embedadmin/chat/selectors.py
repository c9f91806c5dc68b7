"""Reads of the Chat API's data. Lookups that could cross accounts take the agent or account they read in."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db.models import DurationField, ExpressionWrapper, F
from django.db.models.functions import Now
from django.utils import timezone

from embedadmin.accounts.models import Account
from embedadmin.chat import events
from embedadmin.chat.models import Agent, ChatUser, Run, Thread, ThreadEvent
from embedadmin.core.errors import NotFound
from embedadmin.core.prepared import Nullable, PreparedQuery

if TYPE_CHECKING:
    from django.contrib.auth.models import User


@dataclass(frozen=True)
class LoggedFrame:
    seq: int
    message: dict[str, Any]


# Every stream-chat-state request runs these: compiled once (embedadmin/core/prepared.py).
_AGENT: PreparedQuery[Agent] = PreparedQuery(
    Agent,
    lambda account_name, agent_id: (
        Agent.objects.select_related("account", "deployment")
        .filter(account__name=account_name, public_id=agent_id)
        .order_by()[:1]
    ),
    sentinels=("\x00account", "\x00agent"),
)
_CHAT_USER_EXTERNAL: PreparedQuery[ChatUser] = PreparedQuery(
    ChatUser,
    lambda account_id, external_id: ChatUser.objects.filter(
        account_id=account_id, external_id=external_id, internal_user__isnull=True
    ).order_by()[:1],
    sentinels=(-9_000_001, "\x00external-id"),
)
_CHAT_USER_INTERNAL: PreparedQuery[ChatUser] = PreparedQuery(
    ChatUser,
    lambda account_id, user_id: ChatUser.objects.filter(account_id=account_id, internal_user_id=user_id).order_by()[:1],
    sentinels=(-9_000_001, -9_000_002),
)
_THREAD: PreparedQuery[Thread] = PreparedQuery(
    Thread,
    lambda agent_id, chat_id: (
        Thread.objects.select_related("owner").filter(agent_id=agent_id, chat_id=chat_id).order_by()[:1]
    ),
    sentinels=(-9_000_001, "\x00chat-id"),
)
_RUNNING_RUN: PreparedQuery[Run] = PreparedQuery(
    Run,
    lambda thread_id: Run.objects.filter(thread_id=thread_id, status=Run.Status.RUNNING).order_by("pk")[:1],
    sentinels=(-9_000_001,),
)
_LAST_SEQ: PreparedQuery[ThreadEvent] = PreparedQuery(
    ThreadEvent,
    lambda thread_id: ThreadEvent.objects.filter(thread_id=thread_id).order_by("-seq").values_list("seq")[:1],
    sentinels=(-9_000_001,),
)
_THREAD_MESSAGES: PreparedQuery[ThreadEvent] = PreparedQuery(
    ThreadEvent,
    lambda thread_id, before_seq: (
        (
            ThreadEvent.objects.filter(thread_id=thread_id)
            if before_seq is None
            else ThreadEvent.objects.filter(thread_id=thread_id, seq__lt=before_seq)
        )
        .order_by("seq")
        .values_list("seq", "message")
    ),
    # seq is a PositiveIntegerField: a negative sentinel would compile to an always-empty query.
    sentinels=(-9_000_001, Nullable(2_000_000_002)),
)
_RUN_FRAMES_AFTER: PreparedQuery[ThreadEvent] = PreparedQuery(
    ThreadEvent,
    lambda run_id, after_seq: (
        ThreadEvent.objects.filter(run_id=run_id, seq__gt=after_seq).order_by("seq").values_list("seq", "message")
    ),
    sentinels=(-9_000_001, 2_000_000_002),
)
# A heartbeat's age as the database measures it (its clock wrote the heartbeat): now() - heartbeat_at.
_RUN_HEALTH: PreparedQuery[Run] = PreparedQuery(
    Run,
    lambda run_id: (
        Run.objects.filter(pk=run_id)
        .order_by()
        .annotate(heartbeat_age=ExpressionWrapper(Now() - F("heartbeat_at"), output_field=DurationField()))
        .values_list("status", "heartbeat_age")
    ),
    sentinels=(-9_000_001,),
)


def agent_get(*, account_name: str, agent_id: str) -> Agent:
    """The agent ``agent_id`` of account ``account_name``; 404 names which one is unknown."""
    agent = _AGENT.first(account_name, agent_id)
    if agent is None:
        if not Account.objects.filter(name=account_name).exists():
            raise NotFound(f"Account {account_name!r} not found")
        raise NotFound(f"Agent {agent_id!r} not found")
    return agent


def chat_user_find(
    *, account: Account, external_id: str | None = None, internal_user: User | None = None
) -> ChatUser | None:
    if internal_user is not None:
        return _CHAT_USER_INTERNAL.first(account.pk, internal_user.pk)
    return _CHAT_USER_EXTERNAL.first(account.pk, external_id)


def thread_get(*, agent: Agent, chat_id: str) -> Thread:
    """A thread of ``agent`` by its ``chatId`` (404 when unknown)."""
    thread = _THREAD.first(agent.pk, chat_id)
    if thread is None:
        raise NotFound(f"Chat {chat_id!r} not found")
    return thread


def thread_of_owner(*, agent: Agent, owner: ChatUser, chat_id: str) -> Thread:
    """A thread the user owns; someone else's thread is as unknown as a missing one (404)."""
    thread = thread_get(agent=agent, chat_id=chat_id)
    if thread.owner_id != owner.pk:
        raise NotFound(f"Chat {chat_id!r} not found")
    return thread


def thread_running_run(*, thread_id: int) -> Run | None:
    return _RUNNING_RUN.first(thread_id)


def thread_last_seq(*, thread_id: int) -> int:
    found = _LAST_SEQ.rows(thread_id)
    return found[0][0] if found else 0


def run_frames_after(*, run_id: int, after_seq: int) -> list[LoggedFrame]:
    """The frames a run logged after ``after_seq``, in order (replay of a stream)."""
    return [LoggedFrame(seq=seq, message=message) for seq, message in _RUN_FRAMES_AFTER.rows(run_id, after_seq)]


def thread_messages(*, thread_id: int, before_seq: int | None = None) -> list[dict[str, Any]]:
    """The consolidated messages of a thread (``__state__``), optionally only those logged before a seq."""
    return events.consolidate(message for _, message in _THREAD_MESSAGES.rows(thread_id, before_seq))


def thread_state(*, thread_id: int) -> tuple[list[dict[str, Any]], int]:
    """The thread's consolidated messages and the seq of its last logged frame (0 when none), in one read."""
    rows = _THREAD_MESSAGES.rows(thread_id, None)
    return events.consolidate(message for _, message in rows), rows[-1][0] if rows else 0


def run_health(*, run_id: int) -> tuple[str, dt.datetime] | None:
    """A run's status and last heartbeat as this process's clock reads it; None when it no longer exists.

    The database wrote the heartbeat on its own clock and measures how long ago that was; the heartbeat is that long
    before this process's now, so comparing it with ``timezone.now()`` judges it by the database's clock, whatever
    this server's clock says."""
    found = _RUN_HEALTH.rows(run_id)
    if not found:
        return None
    status, age = found[0]
    return status, timezone.now() - age


def run_for_execution(*, run_id: int) -> Run | None:
    return Run.objects.select_related("thread__agent__deployment").filter(pk=run_id).first()


def stale_runs(*, stale_after: dt.timedelta) -> list[tuple[int, int]]:
    """``(run id, thread id)`` of the running runs whose heartbeat is older than ``stale_after`` by the database's
    clock."""
    return list(
        Run.objects.filter(status=Run.Status.RUNNING, heartbeat_at__lt=Now() - stale_after)
        .order_by("pk")
        .values_list("pk", "thread_id")
    )


def chat_api_url(agent: Agent, site_url: str) -> str:
    """The Chat API URL of an agent (what the panel shows as its Chat API URL)."""
    return f"{site_url.rstrip('/')}/api/v1/public/{agent.account.name}/agents/{agent.public_id}"
