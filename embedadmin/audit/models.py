"""The audit log and the daily usage figures.

An entry is written in the same transaction as the change it records (``services.entry_record`` refuses to run
outside one), so a change that rolls back leaves no entry. Entries keep what they say in plain columns, not foreign
keys to the actor or the resource: an entry must outlive the key that made the change and the row it changed.
Nothing secret goes in: a credential is named by its id and public prefix, never by its value, and ``details``
holds field names and counts, never the values sent.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from embedadmin.accounts.models import Account


class AuditEntry(models.Model):
    class ActorKind(models.TextChoices):
        USER = "user", "Panel user"
        API_KEY = "api_key", "API key"
        PLATFORM_TOKEN = "platform_token", "Platform token"
        SYSTEM = "system", "System"

    id = models.BigAutoField(primary_key=True)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="audit_entries")
    occurred_at = models.DateTimeField(default=timezone.now)
    # Who: the credential (kind, id, a label such as "ci (ak_3f9c…)") and the user it belongs to, if any.
    actor_kind = models.CharField(max_length=16, choices=ActorKind.choices)
    actor_id = models.CharField(max_length=64, blank=True, default="")
    actor_label = models.CharField(max_length=300, blank=True, default="")
    actor_owner = models.CharField(max_length=300, blank=True, default="")
    # Through which door: platform_api, build_api, scim, embed_api, panel.
    via = models.CharField(max_length=16)
    # What: "deployment.update", "scim_user.delete", "api_key.revoke", ...
    action = models.CharField(max_length=64)
    resource_type = models.CharField(max_length=48)
    resource_id = models.CharField(max_length=300, blank=True, default="")
    details = models.JSONField(default=dict, blank=True)
    # From where.
    ip = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=512, blank=True, default="")

    class Meta:
        verbose_name = "audit log entry"
        verbose_name_plural = "audit log entries"
        indexes = [
            # The log's pages (newest first) and its filters, each within one account.
            models.Index(fields=["account", "-id"], name="audit_account_id"),
            models.Index(fields=["account", "occurred_at"], name="audit_account_time"),
            models.Index(fields=["account", "action", "-id"], name="audit_account_action"),
            models.Index(fields=["account", "resource_type", "resource_id"], name="audit_account_resource"),
            models.Index(fields=["account", "actor_kind", "actor_id"], name="audit_account_actor"),
            # The retention task's range.
            models.Index(fields=["occurred_at"], name="audit_time"),
        ]

    def __str__(self) -> str:
        return f"{self.occurred_at:%Y-%m-%d %H:%M:%S} {self.action} {self.resource_id} by {self.actor_label}"


class UsageKind(models.TextChoices):
    """What a daily usage figure is of; its label is the panel's column title."""

    SESSIONS = "sessions", "Sessions minted"
    CHAT_MESSAGES = "chat_messages", "Chat messages"
    EXTERNAL_USERS = "external_users", "External users"
    NON_EPHEMERAL_CHAT_USERS = "non_ephemeral_chat_users", "Non-ephemeral chat users"
    EPHEMERAL_CHAT_USERS = "ephemeral_chat_users", "Ephemeral chat users"


# Measured, not counted: a snapshot set by the reconcile task, the day's last one kept; a day without one is unknown.
USAGE_GAUGES: tuple[str, ...] = (
    UsageKind.EXTERNAL_USERS.value,
    UsageKind.NON_EPHEMERAL_CHAT_USERS.value,
    UsageKind.EPHEMERAL_CHAT_USERS.value,
)


class DailyUsage(models.Model):
    """An account's usage on a day (UTC), one figure per ``kind``: what was counted (sessions minted, chat messages
    started) and what was measured (how many users the account had).

    A counter's figure for a day is the sum of up to ``SHARDS`` rows: each increment updates one of them, chosen at
    random, so concurrent mints in one account rarely wait for each other's commit on one locked row. A gauge
    (``GAUGES``) is set, not added, by one writer (the reconcile task): it lives in shard 0 only, so the same sum
    reads it (ADR 0016)."""

    SHARDS = 8
    Kind = UsageKind
    GAUGES = USAGE_GAUGES

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="daily_usage")
    day = models.DateField()
    kind = models.CharField(max_length=32, choices=UsageKind.choices)
    shard = models.PositiveSmallIntegerField(default=0)
    count = models.BigIntegerField(default=0)

    class Meta:
        verbose_name_plural = "daily usage"
        constraints = [
            models.UniqueConstraint(fields=["account", "day", "kind", "shard"], name="daily_usage_once"),
            models.CheckConstraint(condition=models.Q(kind__in=UsageKind.values), name="daily_usage_kind_valid"),
            models.CheckConstraint(
                condition=~models.Q(kind__in=USAGE_GAUGES) | models.Q(shard=0), name="daily_usage_gauge_in_shard_0"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.kind}: {self.count}"
