"""Writing the audit log and the daily usage figures.

``entry_record`` is the one way an entry is written: the Platform API, SCIM and embedding views reach it through
:class:`embedadmin.audit.audited_views.AuditedView`, the panel through its admin hooks
(``embedadmin.panel.panel_admin``). It must run inside the transaction of the change it records, so that the change
and its entry commit or roll back together.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from embedadmin.audit.models import AuditEntry, DailyUsage


@dataclass(frozen=True)
class Actor:
    """Who made a change and from where: the credential (never its value), its owner, the door and the client."""

    kind: str  # AuditEntry.ActorKind
    id: str
    label: str
    via: str
    owner: str = ""
    ip: str | None = None
    user_agent: str = ""


@dataclass(frozen=True)
class Change:
    """What changed: ``action`` is ``<resource_type>.<verb>``; ``details`` holds names and counts, never values."""

    action: str
    resource_type: str
    resource_id: str = ""
    details: dict[str, Any] = field(default_factory=dict)


def entry_record(*, account_id: int, actor: Actor, change: Change) -> AuditEntry:
    """Record one change, in the transaction that makes it (refused outside one: an entry must not outlive a
    change that rolled back, nor a change commit without its entry)."""
    if not connection.in_atomic_block:
        raise RuntimeError(f"audit entry {change.action!r} recorded outside the transaction of its change")
    return AuditEntry.objects.create(
        account_id=account_id,
        actor_kind=actor.kind,
        actor_id=actor.id[:64],
        actor_label=actor.label[:300],
        actor_owner=actor.owner[:300],
        via=actor.via,
        action=change.action[:64],
        resource_type=change.resource_type[:48],
        resource_id=str(change.resource_id)[:300],
        details=change.details,
        ip=actor.ip,
        user_agent=actor.user_agent[:512],
    )


def usage_count(*, account_id: int, kind: str, amount: int = 1, day: dt.date | None = None) -> None:
    """Add ``amount`` to an account's counter of ``kind`` for today (UTC). Called last in the transaction that does
    the counted thing, so a rolled-back mint is not counted; the counter row it updates (one of the day's
    ``DailyUsage.SHARDS``, at random) stays locked until that commit. One UPDATE once the row exists; the first
    call for a shard inserts it (in a savepoint: two first calls race, the loser updates the winner's row)."""
    if kind in DailyUsage.GAUGES:
        raise ValueError(f"{kind!r} is measured, not counted: usage_snapshot sets it")
    day = day or timezone.now().date()
    shard = random.randrange(DailyUsage.SHARDS)
    counter = DailyUsage.objects.filter(account_id=account_id, day=day, kind=kind, shard=shard)
    if counter.update(count=F("count") + amount):
        return
    try:
        with transaction.atomic():
            DailyUsage.objects.create(account_id=account_id, day=day, kind=kind, shard=shard, count=amount)
    except IntegrityError:
        counter.update(count=F("count") + amount)


def usage_snapshot(*, account_id: int, figures: Mapping[str, int], day: dt.date | None = None) -> None:
    """Set an account's measured figures (``DailyUsage.GAUGES``: how many users it has) for today (UTC), replacing
    the day's earlier snapshot. One statement, an insert that updates the row already there (shard 0, the only one
    a gauge has), so two reconciles at once leave one row per figure, the last one's."""
    counted = sorted(set(figures) - set(DailyUsage.GAUGES))
    if counted:
        raise ValueError(f"{', '.join(counted)}: counted, not measured: usage_count adds to it")
    day = day or timezone.now().date()
    rows = [DailyUsage(account_id=account_id, day=day, kind=kind, shard=0, count=n) for kind, n in figures.items()]
    DailyUsage.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["account", "day", "kind", "shard"],
        update_fields=["count"],
    )


def entries_purge(*, older_than: dt.datetime, batch: int = 5_000) -> int:
    """Delete the entries that occurred before ``older_than``, ``batch`` rows per transaction; returns how many."""
    deleted = 0
    while True:
        with transaction.atomic():
            ids = list(
                AuditEntry.objects.filter(occurred_at__lt=older_than)
                .order_by("occurred_at")
                .values_list("id", flat=True)[:batch]
            )
            if not ids:
                return deleted
            deleted += AuditEntry.objects.filter(id__in=ids).delete()[0]
