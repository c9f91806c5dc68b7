"""The panel's home page: an overview per account (users against their caps, sessions and chat messages per day,
dashboards published, the latest audit entries), above the list of what the panel administers.

An account administrator sees their account; a superuser sees every account (the busiest first, at most
:data:`MAX_ACCOUNTS` of them) and the install's figures per day. The page costs a fixed number of queries whatever
the number of accounts: every figure is read grouped by account.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone

from embedadmin.accounts.models import Account, TenantSettings
from embedadmin.audit.models import AuditEntry, DailyUsage
from embedadmin.dashboards.models import Dashboard
from embedadmin.panel.tenancy import PanelViewer

DAYS = 30
MAX_ACCOUNTS = 50
RECENT_ENTRIES = 10
COUNTED = (DailyUsage.Kind.SESSIONS.value, DailyUsage.Kind.CHAT_MESSAGES.value)


@dataclass(frozen=True)
class Cap:
    """A count against its limit (external users, non-ephemeral chat users)."""

    used: int
    limit: int

    @property
    def percent(self) -> int:
        """How full, in whole percent (100 when the limit is 0 and nothing can be added)."""
        if self.limit <= 0:
            return 100
        return min(100, round(100 * self.used / self.limit))

    @property
    def near(self) -> bool:
        """At 90% of the cap or beyond: worth an administrator's attention before sessions are refused."""
        return self.used * 10 >= self.limit * 9


@dataclass(frozen=True)
class AccountOverview:
    account: Account
    external_users: Cap
    chat_users: Cap
    sessions: int  # in the last DAYS days
    chat_messages: int
    dashboards_published: int


@dataclass(frozen=True)
class Overview:
    accounts: list[AccountOverview]
    more_accounts: int  # accounts past MAX_ACCOUNTS, not shown
    days: int
    # One point per day and counted kind: {"day": "2026-11-29", "kind": "Sessions minted", "count": 12}
    per_day: list[dict[str, Any]]
    recent: QuerySet[AuditEntry]


def _accounts(viewer: PanelViewer) -> QuerySet[Account]:
    if viewer.account is not None:
        return Account.objects.filter(pk=viewer.account.pk)
    if viewer.is_superuser:
        return Account.objects.all()
    return Account.objects.none()  # fail closed: the site refuses such a viewer before this


def overview_of(viewer: PanelViewer, *, today: dt.date | None = None) -> Overview:
    """What the panel's home shows ``viewer``: only their account's rows unless they are a superuser."""
    today = today or timezone.now().date()
    since = today - dt.timedelta(days=DAYS - 1)
    accounts = _accounts(viewer)
    usage = DailyUsage.objects.filter(account__in=accounts, day__gte=since, day__lte=today, kind__in=COUNTED)
    totals: dict[tuple[int, str], int] = {}
    for row in usage.values("account_id", "kind").annotate(total=Sum("count")).order_by():
        totals[(row["account_id"], row["kind"])] = row["total"] or 0
    published = dict(
        Dashboard.objects.filter(account__in=accounts, status=Dashboard.Status.PUBLISHED)
        .values("account_id")
        .annotate(n=Count("id"))
        .values_list("account_id", "n")
    )
    sessions_kind, messages_kind = COUNTED
    rows = list(
        accounts.select_related("tenant_settings")
        .annotate(
            recent_sessions=Sum(
                "daily_usage__count",
                filter=Q(daily_usage__kind=sessions_kind, daily_usage__day__gte=since, daily_usage__day__lte=today),
            )
        )
        # The busiest first, then by name: the accounts a superuser most likely looks for.
        .order_by("-recent_sessions", "name", "pk")[: MAX_ACCOUNTS + 1]
    )
    shown = rows[:MAX_ACCOUNTS]
    more = accounts.count() - len(shown) if len(rows) > MAX_ACCOUNTS else 0
    overviews = []
    for account in shown:
        settings = _settings(account)
        overviews.append(
            AccountOverview(
                account=account,
                external_users=Cap(settings.external_user_count, settings.max_external_users),
                chat_users=Cap(settings.non_ephemeral_chat_user_count, settings.max_non_ephemeral_chat_users),
                sessions=totals.get((account.pk, sessions_kind), 0),
                chat_messages=totals.get((account.pk, messages_kind), 0),
                dashboards_published=published.get(account.pk, 0),
            )
        )
    return Overview(
        accounts=overviews,
        more_accounts=more,
        days=DAYS,
        per_day=_per_day(usage, since=since, today=today),
        recent=AuditEntry.objects.filter(account__in=accounts)
        .select_related("account")
        .order_by("-id")[:RECENT_ENTRIES],
    )


def _settings(account: Account) -> TenantSettings:
    try:
        return account.tenant_settings
    except TenantSettings.DoesNotExist:
        return TenantSettings(account=account)  # unsaved: the defaults, nothing counted yet


def _per_day(usage: QuerySet[DailyUsage], *, since: dt.date, today: dt.date) -> list[dict[str, Any]]:
    """Every day of the window for both counted kinds (0 where nothing was counted), so the chart's line does not
    skip a quiet day."""
    counted = {
        (row["day"], row["kind"]): row["total"] or 0
        for row in usage.values("day", "kind").annotate(total=Sum("count")).order_by()
    }
    labels = dict(DailyUsage.Kind.choices)
    points = []
    for offset in range((today - since).days + 1):
        day = since + dt.timedelta(days=offset)
        for kind in COUNTED:
            points.append({"day": day.isoformat(), "kind": labels[kind], "count": counted.get((day, kind), 0)})
    return points


__all__ = ["DAYS", "MAX_ACCOUNTS", "AccountOverview", "Cap", "Overview", "overview_of"]
