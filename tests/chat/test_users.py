"""Chat users: ephemeral by default, the non-ephemeral limit (also under races), expiry with a frozen
clock, and the reconcile worker's counters and the user counts it records in the daily usage table."""

from __future__ import annotations

import datetime as dt
import functools
import threading

import pytest
from django.utils import timezone

from embedadmin.accounts.models import TenantSettings
from embedadmin.audit.models import DailyUsage
from embedadmin.chat import services, tasks
from embedadmin.chat.bus import InProcessBus
from embedadmin.chat.models import ChatUser, Thread, ThreadEvent
from embedadmin.chat.services import ChatIdentity
from embedadmin.core.errors import LimitExceeded
from embedadmin.directory.models import ExternalUser
from tests.conftest import run_concurrently

pytestmark = pytest.mark.django_db(transaction=True)

T0 = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)


def _limit(account, limit: int) -> None:
    TenantSettings.objects.filter(account=account).update(max_non_ephemeral_chat_users=limit)


def _count(account) -> int:
    return TenantSettings.objects.get(account=account).non_ephemeral_chat_user_count


def test_the_request_that_would_exceed_the_non_ephemeral_limit_is_refused(chat, acme):
    _limit(acme.account, 1)

    assert chat.ask(sessionSettings={"externalId": "u1", "isEphemeral": False}).status == 200
    again = chat.ask(sessionSettings={"externalId": "u1", "isEphemeral": False})
    refused = chat.ask(sessionSettings={"externalId": "u2", "isEphemeral": False})
    ephemeral = chat.ask(sessionSettings={"externalId": "u3"})

    assert again.status == 200
    assert refused.status == 429
    assert refused.lines == [
        {
            "error": "Non-ephemeral chat user limit reached: this account allows at most 1 non-ephemeral chat users; "
            "send isEphemeral: true or remove users"
        }
    ]
    assert ephemeral.status == 200
    assert sorted(ChatUser.objects.values_list("external_id", "is_ephemeral")) == [("u1", False), ("u3", True)]
    assert _count(acme.account) == 1


def test_turning_a_user_persistent_takes_a_place_and_back_releases_it(acme):
    _limit(acme.account, 1)
    user = services.chat_user_upsert(account=acme.account, identity=ChatIdentity(external_id="a"))
    assert user.is_ephemeral

    services.chat_user_upsert(account=acme.account, identity=ChatIdentity(external_id="a", is_ephemeral=False))
    with pytest.raises(LimitExceeded):
        services.chat_user_upsert(account=acme.account, identity=ChatIdentity(external_id="b", is_ephemeral=False))
    assert _count(acme.account) == 1
    services.chat_user_upsert(account=acme.account, identity=ChatIdentity(external_id="a", is_ephemeral=True))

    assert _count(acme.account) == 0
    assert ChatUser.objects.get(external_id="a").expires_at is not None
    assert not ChatUser.objects.filter(external_id="b").exists()


def test_concurrent_new_persistent_users_never_overshoot_the_limit(acme, on_postgres):
    _limit(acme.account, 3)

    def create(index: int) -> str:
        try:
            services.chat_user_upsert(
                account=acme.account, identity=ChatIdentity(external_id=f"u{index}", is_ephemeral=False)
            )
            return "ok"
        except LimitExceeded:
            return "limit"

    outcomes = run_concurrently([functools.partial(create, i) for i in range(8)])

    assert sorted(outcomes) == ["limit"] * 5 + ["ok"] * 3
    assert ChatUser.objects.filter(is_ephemeral=False).count() == 3
    assert _count(acme.account) == 3


def test_ephemeral_users_expire_with_their_threads_at_their_ttl(acme, chat):
    user = services.chat_user_upsert(
        account=acme.account, identity=ChatIdentity(external_id="e", ttl_seconds=60), now=T0
    )
    keeper = services.chat_user_upsert(account=acme.account, identity=ChatIdentity(external_id="k"), now=T0)
    persistent = services.chat_user_upsert(
        account=acme.account, identity=ChatIdentity(external_id="p", is_ephemeral=False), now=T0
    )
    services.thread_create(agent=chat.agent, owner=user, branch_name=None, is_default_branch=None)

    assert services.chat_users_expire(now=T0 + dt.timedelta(seconds=59)) == 0
    assert services.chat_users_expire(now=T0 + dt.timedelta(seconds=60)) == 1
    assert services.chat_users_expire(now=T0 + dt.timedelta(seconds=60)) == 0  # idempotent

    assert set(ChatUser.objects.values_list("pk", flat=True)) == {keeper.pk, persistent.pk}
    assert Thread.objects.count() == 0
    assert keeper.expires_at == T0 + dt.timedelta(days=7)
    assert services.chat_users_expire(now=T0 + dt.timedelta(days=7)) == 1
    assert list(ChatUser.objects.values_list("pk", flat=True)) == [persistent.pk]


def test_a_ttl_is_never_extended_only_shortened(acme):
    services.chat_user_upsert(account=acme.account, identity=ChatIdentity(external_id="e", ttl_seconds=600), now=T0)

    later = T0 + dt.timedelta(seconds=300)
    longer = services.chat_user_upsert(
        account=acme.account, identity=ChatIdentity(external_id="e", ttl_seconds=3600), now=later
    )
    assert longer.expires_at == T0 + dt.timedelta(seconds=600)
    shorter = services.chat_user_upsert(
        account=acme.account, identity=ChatIdentity(external_id="e", ttl_seconds=10), now=later
    )
    assert shorter.expires_at == later + dt.timedelta(seconds=10)
    assert ChatUser.objects.get().expires_at == later + dt.timedelta(seconds=10)


def test_an_expired_user_is_recreated_without_its_old_threads_even_before_the_worker_runs(acme, chat):
    old = services.chat_user_upsert(
        account=acme.account, identity=ChatIdentity(external_id="e", ttl_seconds=60), now=T0
    )
    services.thread_create(agent=chat.agent, owner=old, branch_name=None, is_default_branch=None)

    new = services.chat_user_upsert(
        account=acme.account, identity=ChatIdentity(external_id="e"), now=T0 + dt.timedelta(seconds=61)
    )

    assert new.pk != old.pk
    assert Thread.objects.count() == 0


class NoRuntime:
    """Executes nothing: its runs stay "running", with their events."""

    def submit(self, run_id: int, *, after: threading.Event | None = None) -> None:
        pass


def test_two_expiry_workers_at_once_delete_each_user_once(acme, chat, on_postgres):
    users = [
        services.chat_user_upsert(
            account=acme.account, identity=ChatIdentity(external_id=f"e{i}", ttl_seconds=1), now=T0
        )
        for i in range(40)
    ]
    for user in users[:10]:
        thread = services.thread_create(agent=chat.agent, owner=user, branch_name=None, is_default_branch=None)
        services.run_start(
            account_id=chat.agent.account_id,
            thread=thread,
            question="q",
            message_id=None,
            query_context={},
            bus=InProcessBus(),
            runtime=NoRuntime(),
        )
    assert ThreadEvent.objects.count() == 10  # each run's user echo

    def expire() -> int:
        return services.chat_users_expire(now=T0 + dt.timedelta(seconds=2), batch_size=3)

    counts = run_concurrently([expire, expire])

    assert sum(counts) == 40
    assert ChatUser.objects.count() == 0
    assert Thread.objects.count() == 0
    assert ThreadEvent.objects.count() == 0


def test_the_expiry_task_uses_the_clock(acme):
    services.chat_user_upsert(
        account=acme.account,
        identity=ChatIdentity(external_id="gone", ttl_seconds=1),
        now=timezone.now() - dt.timedelta(seconds=5),
    )

    assert tasks.expire_ephemeral_users() == 1
    assert tasks.expire_ephemeral_users() == 0


def _user_figures(account) -> list[tuple]:
    rows = DailyUsage.objects.filter(account=account).exclude(kind__in=["sessions", "chat_messages"])
    return sorted(rows.values_list("day", "kind", "shard", "count"))


def test_reconcile_recounts_users_and_records_the_days_user_counts_in_daily_usage(acme, globex):
    ExternalUser.objects.create(account=acme.account, external_id="x1")
    ExternalUser.objects.create(account=acme.account, external_id="x2")
    services.chat_user_upsert(account=acme.account, identity=ChatIdentity(external_id="p", is_ephemeral=False))
    services.chat_user_upsert(account=acme.account, identity=ChatIdentity(external_id="e1"))
    services.chat_user_upsert(account=acme.account, identity=ChatIdentity(external_id="e2"))
    TenantSettings.objects.filter(account=acme.account).update(external_user_count=7, non_ephemeral_chat_user_count=9)

    assert tasks.reconcile_user_counts() == 2
    ChatUser.objects.filter(account=acme.account, external_id="e2").delete()
    assert tasks.reconcile_user_counts() == 2  # same day: the figures are set again, not added nor duplicated

    row = TenantSettings.objects.get(account=acme.account)
    assert (row.external_user_count, row.non_ephemeral_chat_user_count) == (2, 1)
    today = timezone.now().date()  # the day in UTC, as sessions and chat messages are counted
    assert _user_figures(acme.account) == [
        (today, "ephemeral_chat_users", 0, 1),
        (today, "external_users", 0, 2),
        (today, "non_ephemeral_chat_users", 0, 1),
    ]
    assert _user_figures(globex.account) == [
        (today, "ephemeral_chat_users", 0, 0),
        (today, "external_users", 0, 0),
        (today, "non_ephemeral_chat_users", 0, 0),
    ]


def test_reconcile_of_another_day_leaves_the_days_before_as_they_were(acme):
    services.chat_user_upsert(account=acme.account, identity=ChatIdentity(external_id="e1"))
    yesterday = timezone.now().date() - dt.timedelta(days=1)
    services.user_counts_reconcile(account=acme.account, day=yesterday)
    services.chat_user_upsert(account=acme.account, identity=ChatIdentity(external_id="e2"))

    figures = services.user_counts_reconcile(account=acme.account)

    assert figures == {"external_users": 0, "non_ephemeral_chat_users": 0, "ephemeral_chat_users": 2}
    ephemeral = DailyUsage.objects.filter(account=acme.account, kind=DailyUsage.Kind.EPHEMERAL_CHAT_USERS)
    assert sorted(ephemeral.values_list("day", "count")) == [(yesterday, 1), (yesterday + dt.timedelta(days=1), 2)]


def test_beat_runs_the_workers():
    from django.conf import settings

    schedule = {entry["task"]: entry["schedule"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert schedule["chat.expire_ephemeral_users"] == 60.0
    assert schedule["chat.fail_stale_runs"] + services.STALE_AFTER.total_seconds() <= 60
    assert "chat.reconcile_user_counts" in schedule
