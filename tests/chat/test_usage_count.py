"""Chat messages are counted per account and day (audit.DailyUsage) when their run starts, not logged one by one;
a message refused (another run streaming in the thread) is not counted."""

from __future__ import annotations

import threading

import pytest

from embedadmin.audit.models import DailyUsage
from embedadmin.chat import services
from embedadmin.chat.bus import InProcessBus
from embedadmin.chat.services import ChatIdentity
from embedadmin.core.errors import Conflict


class NoRuntime:
    """Executes nothing: a started run stays running."""

    def submit(self, run_id: int, *, after: threading.Event | None = None) -> None:
        pass


def test_each_started_message_is_counted_once_and_a_refused_one_not(acme, globex, chat):
    user = services.chat_user_upsert(account=acme.account, identity=ChatIdentity(external_id="ann", ttl_seconds=None))
    bus, runtime = InProcessBus(), NoRuntime()

    def send(thread, question: str):
        return services.run_start(
            account_id=acme.account.pk,
            thread=thread,
            question=question,
            message_id=None,
            query_context={},
            bus=bus,
            runtime=runtime,
        )

    threads = [
        services.thread_create(agent=chat.agent, owner=user, branch_name=None, is_default_branch=None) for _ in range(3)
    ]
    for thread in threads:
        send(thread, "How many orders?")
    with pytest.raises(Conflict):
        send(threads[0], "And by status?")  # the first run still streams: refused

    counters = DailyUsage.objects.filter(kind=DailyUsage.Kind.CHAT_MESSAGES)
    assert {c.account_id for c in counters} == {acme.account.pk}
    assert sum(c.count for c in counters) == 3
