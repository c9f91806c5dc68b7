"""Reading the audit log and the daily usage figures, always within one account."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from django.db.models import QuerySet, Sum

from embedadmin.accounts.models import Account
from embedadmin.audit.models import AuditEntry, DailyUsage


@dataclass(frozen=True)
class EntryFilters:
    since: dt.datetime | None = None  # occurred_at >= since
    until: dt.datetime | None = None  # occurred_at < until
    actor_kind: str | None = None
    actor_id: str | None = None
    action: str | None = None  # "deployment.update", or "deployment" for every deployment action
    resource_type: str | None = None
    resource_id: str | None = None
    via: str | None = None


def entries_of(*, account: Account, filters: EntryFilters) -> QuerySet[AuditEntry]:
    """The account's entries that pass ``filters``; the caller orders and pages them (newest first, by id)."""
    rows = AuditEntry.objects.filter(account=account)
    if filters.since is not None:
        rows = rows.filter(occurred_at__gte=filters.since)
    if filters.until is not None:
        rows = rows.filter(occurred_at__lt=filters.until)
    if filters.actor_kind:
        rows = rows.filter(actor_kind=filters.actor_kind)
    if filters.actor_id:
        rows = rows.filter(actor_id=filters.actor_id)
    if filters.action:
        rows = (
            rows.filter(action=filters.action) if "." in filters.action else rows.filter(resource_type=filters.action)
        )
    if filters.resource_type:
        rows = rows.filter(resource_type=filters.resource_type)
    if filters.resource_id:
        rows = rows.filter(resource_id=filters.resource_id)
    if filters.via:
        rows = rows.filter(via=filters.via)
    return rows


def _empty_day() -> dict[str, int | None]:
    """A day with no row: nothing counted (0), nothing measured (None: not known, which is not 0 users)."""
    return {kind: None if kind in DailyUsage.GAUGES else 0 for kind in DailyUsage.Kind.values}


def daily_totals(rows: QuerySet[DailyUsage]) -> dict[tuple[dt.date, str], dict[str, int | None]]:
    """What ``rows`` hold, by day and account name: every kind's figure, the sum of the day's rows of that kind (a
    counter's shards; a gauge's one row). A kind without a row is 0 when counted, None when measured."""
    totals: dict[tuple[dt.date, str], dict[str, int | None]] = {}
    for row in rows.values("day", "account__name", "kind").annotate(total=Sum("count")).order_by():
        day = totals.setdefault((row["day"], row["account__name"]), _empty_day())
        day[row["kind"]] = row["total"]
    return totals


def daily_usage_of(*, account: Account, since: dt.date, until: dt.date) -> Mapping[dt.date, dict[str, int | None]]:
    """Figures per day from ``since`` to ``until`` inclusive, every kind present (see ``daily_totals``)."""
    days: dict[dt.date, dict[str, int | None]] = {}
    for offset in range((until - since).days + 1):  # never a day past ``until`` (date.max has no next day)
        days[since + dt.timedelta(days=offset)] = _empty_day()
    rows = DailyUsage.objects.filter(account=account, day__gte=since, day__lte=until)
    days.update({day: figures for (day, _account), figures in daily_totals(rows).items()})
    return days
