"""Celery tasks of the Chat API: thin, idempotent, late-acked (settings), each calling one service."""

from __future__ import annotations

from celery import shared_task

from embedadmin.accounts.models import Account
from embedadmin.chat import services


@shared_task(name="chat.expire_ephemeral_users", ignore_result=True)
def expire_ephemeral_users() -> int:
    """Delete ephemeral chat users past their TTL, with their threads (beat: every minute)."""
    return services.chat_users_expire()


@shared_task(name="chat.reconcile_user_counts", ignore_result=True)
def reconcile_user_counts() -> int:
    """Recount every account's users into its counters and today's usage figures; returns accounts done."""
    accounts = list(Account.objects.order_by("pk"))
    for account in accounts:
        services.user_counts_reconcile(account=account)
    return len(accounts)


@shared_task(name="chat.fail_stale_runs", ignore_result=True)
def fail_stale_runs() -> int:
    """Mark runs whose process died as failed, so their threads take messages again."""
    return services.runs_fail_stale()
