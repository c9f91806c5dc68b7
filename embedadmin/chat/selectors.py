"""Reads of the Chat API's data. Lookups that could cross accounts take the agent or account they read in."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Max

from embedadmin.accounts.models import Account
from embedadmin.chat import events
from embedadmin.chat.models import Agent, ChatUser, Run, Thread, ThreadEvent
from embedadmin.core.errors import NotFound


@dataclass(frozen=True)
class LoggedFrame:
    seq: int
    message: dict[str, Any]


def agent_get(*, account_name: str, agent_id: str) -> Agent:
    """The agent ``agent_id`` of account ``account_name``; 404 names which one is unknown."""
    agent = (
        Agent.objects.select_related("account", "deployment")
        .filter(account__name=account_name, public_id=agent_id)
        .first()
    )
    if agent is None:
        if not Account.objects.filter(name=account_name).exists():
            raise NotFound(f"Account {account_name!r} not found")
        raise NotFound(f"Agent {agent_id!r} not found")
    return agent


def chat_user_find(
    *, account: Account, external_id: str | None = None, internal_user: AbstractBaseUser | None = None
) -> ChatUser | None:
    users = ChatUser.objects.filter(account=account)
    if internal_user is not None:
        return users.filter(internal_user=internal_user).first()
    return users.filter(external_id=external_id, internal_user__isnull=True).first()


def thread_get(*, agent: Agent, chat_id: str) -> Thread:
    """A thread of ``agent`` by its ``chatId`` (404 when unknown)."""
    thread = Thread.objects.select_related("owner").filter(agent=agent, chat_id=chat_id).first()
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
    return Run.objects.filter(thread_id=thread_id, status=Run.Status.RUNNING).first()


def thread_last_seq(*, thread_id: int) -> int:
    return ThreadEvent.objects.filter(thread_id=thread_id).aggregate(last=Max("seq"))["last"] or 0


def run_frames_after(*, run_id: int, after_seq: int) -> list[LoggedFrame]:
    """The frames a run logged after ``after_seq``, in order (replay of a stream)."""
    rows = ThreadEvent.objects.filter(run_id=run_id, seq__gt=after_seq).order_by("seq").values_list("seq", "message")
    return [LoggedFrame(seq=seq, message=message) for seq, message in rows]


def thread_messages(*, thread_id: int, before_seq: int | None = None) -> list[dict[str, Any]]:
    """The consolidated messages of a thread (``__state__``), optionally only those logged before a seq."""
    rows = ThreadEvent.objects.filter(thread_id=thread_id)
    if before_seq is not None:
        rows = rows.filter(seq__lt=before_seq)
    return events.consolidate(rows.order_by("seq").values_list("message", flat=True))


def run_for_execution(*, run_id: int) -> Run | None:
    return Run.objects.select_related("thread", "thread__agent", "thread__agent__deployment").filter(pk=run_id).first()


def stale_run_ids(*, now: dt.datetime, stale_after: dt.timedelta) -> list[int]:
    return list(
        Run.objects.filter(status=Run.Status.RUNNING, heartbeat_at__lt=now - stale_after)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def chat_api_url(agent: Agent, site_url: str) -> str:
    """The Chat API URL of an agent (what the panel shows as its Chat API URL)."""
    return f"{site_url.rstrip('/')}/api/v1/public/{agent.account.name}/agents/{agent.public_id}"
