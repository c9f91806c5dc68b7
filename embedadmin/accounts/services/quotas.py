"""Per-account caps kept as counters beside their limits (external users, non-ephemeral chat users): reserved in
one conditional UPDATE, released, recounted."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import F

from embedadmin.accounts.models import (
    TenantSettings,
)
from embedadmin.core.errors import LimitExceeded
from embedadmin.core.rows import db_column


@dataclass(frozen=True)
class Quota:
    """A per-account cap kept as a counter on :class:`TenantSettings` next to its limit."""

    counter: str
    limit: str
    exceeded: str  # message format with {limit}


EXTERNAL_USERS = Quota(
    counter="external_user_count",
    limit="max_external_users",
    exceeded="External user limit reached: this account allows at most {limit} external users",
)
NON_EPHEMERAL_CHAT_USERS = Quota(
    counter="non_ephemeral_chat_user_count",
    limit="max_non_ephemeral_chat_users",
    exceeded=(
        "Non-ephemeral chat user limit reached: this account allows at most {limit} non-ephemeral chat users; "
        "send isEphemeral: true or remove users"
    ),
)


@functools.cache
def _quota_reserve_sql(quota: Quota) -> str:
    """``UPDATE ... SET counter = counter + 1 WHERE account = %s AND counter < limit``.

    The ORM's update() compiles this anew on every call (half a millisecond on generate-session's path
    for each new user); only the model's own identifiers are formatted in.
    """
    meta = TenantSettings._meta
    qn = connection.ops.quote_name
    counter, limit = (qn(db_column(meta.get_field(name))) for name in (quota.counter, quota.limit))
    return (
        f"UPDATE {qn(meta.db_table)} SET {counter} = {counter} + 1 "  # noqa: S608
        f"WHERE {qn(db_column(meta.get_field('account')))} = %s AND {counter} < {limit}"
    )


def quota_reserve(*, account_id: int, quota: Quota) -> None:
    """Take one place under an account's cap, or raise 429 (ADR 0002).

    A single conditional UPDATE in the caller's transaction: on PostgreSQL the row lock makes
    concurrent reservations queue, and each re-checks the condition against the committed count, so
    the cap cannot be overshot.
    """
    with connection.cursor() as cursor:
        cursor.execute(_quota_reserve_sql(quota), [account_id])
        taken = cursor.rowcount
    if not taken:
        limit = TenantSettings.objects.filter(account_id=account_id).values_list(quota.limit, flat=True).first()
        raise LimitExceeded(quota.exceeded.format(limit=limit))


def quota_release(*, account_id: int, quota: Quota) -> None:
    """Give back one place under an account's cap (never below zero)."""
    TenantSettings.objects.filter(account_id=account_id, **{f"{quota.counter}__gt": 0}).update(
        **{quota.counter: F(quota.counter) - 1}
    )


def quota_recount(*, account_id: int, quota: Quota, count: Callable[[], int]) -> int:
    """Set a cap's counter to ``count()``, taken under the settings row lock so that no reservation
    slips in between the count and the write; returns the count."""
    with transaction.atomic():
        settings_row = TenantSettings.objects.select_for_update().get(account_id=account_id)
        actual = count()
        if getattr(settings_row, quota.counter) != actual:
            setattr(settings_row, quota.counter, actual)
            settings_row.save(update_fields=[quota.counter])
    return actual
