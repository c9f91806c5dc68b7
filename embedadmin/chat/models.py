"""The Chat API's data: agents, chat users, threads, runs and the thread event log.

The event log (:class:`ThreadEvent`) is the source of truth of a conversation: a run appends every
frame it produces, a response tails the log (live through the event bus, from the table for replay),
and the consolidated messages of ``__state__`` are computed from it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from embedadmin.accounts.models import Account, Deployment
from embedadmin.core.models import TimestampedModel


class Agent(TimestampedModel):
    """An analytics agent of an account, answering over one deployment's data model.

    ``public_id`` is the ``agentId`` of the Chat API URL. ``provider`` picks the language model behind
    it: the offline built-in analyst, or an OpenAI-compatible chat-completions endpoint whose key is
    encrypted at rest.
    """

    class Provider(models.TextChoices):
        BUILTIN = "builtin", "built-in analyst"
        OPENAI = "openai", "OpenAI-compatible"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="agents")
    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="agents")
    public_id = models.CharField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    provider = models.CharField(max_length=16, choices=Provider.choices, default=Provider.BUILTIN)
    base_url = models.URLField(max_length=500, blank=True, default="")
    model = models.CharField(max_length=200, blank=True, default="")
    api_key_encrypted = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["account_id", "name", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(provider__in=["builtin", "openai"]), name="agent_provider_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.public_id})"


class ChatUser(TimestampedModel):
    """Who talks to agents: an external user (``external_id``) or an internal user of the account.

    Created from ``sessionSettings`` or a token's claims, with a snapshot of what the agent queries
    with (groups, user attributes, security context). Ephemeral users (the default) are deleted once
    ``expires_at`` passes; the others count toward the account's non-ephemeral limit.
    """

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="chat_users")
    external_id = models.CharField(max_length=255, blank=True, default="")
    internal_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="chat_users"
    )
    email = models.CharField(max_length=254, blank=True, default="")
    user_attributes = models.JSONField(default=dict, blank=True)
    groups = models.JSONField(default=list, blank=True)
    security_context = models.JSONField(default=dict, blank=True)
    is_ephemeral = models.BooleanField(default=True)
    expires_at = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        ordering = ["account_id", "external_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["account", "external_id"],
                condition=Q(internal_user__isnull=True),
                name="chat_user_external_unique_per_account",
            ),
            models.UniqueConstraint(
                fields=["account", "internal_user"],
                condition=Q(internal_user__isnull=False),
                name="chat_user_internal_unique_per_account",
            ),
            models.CheckConstraint(
                condition=Q(is_ephemeral=False, expires_at__isnull=True)
                | Q(is_ephemeral=True, expires_at__isnull=False),
                name="chat_user_ephemeral_has_expiry",
            ),
        ]

    def __str__(self) -> str:
        return self.external_id or f"internal user #{self.internal_user_id}"


class Thread(TimestampedModel):
    """A conversation of one chat user with one agent; ``chat_id`` is the public ``chatId``."""

    chat_id = models.CharField(max_length=64, unique=True)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="threads")
    owner = models.ForeignKey(ChatUser, on_delete=models.CASCADE, related_name="threads")
    branch_name = models.CharField(max_length=255, blank=True, default="")
    is_default_branch = models.BooleanField(default=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.chat_id


class Run(models.Model):
    """One answer being produced for one user message of a thread.

    At most one run of a thread is ``running`` (a partial unique constraint): that is what refuses a
    second message while the thread streams. ``heartbeat_at`` is refreshed by the process executing the
    run; a run whose heartbeat is stale lost its process and is marked failed.
    """

    class Status(models.TextChoices):
        RUNNING = "running"
        COMPLETED = "completed"
        FAILED = "failed"
        ABORTED = "aborted"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="runs")
    message_id = models.CharField(max_length=64)
    input = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    # What the agent queries with: security context, groups, user attributes, branch (JSON, so any worker
    # process can rebuild it).
    query_context = models.JSONField(default=dict, blank=True)
    # What the user was looking at when they asked (a dashboard's publicId and filters; {} for none): how the
    # agent narrows its queries. A hint only: queries still run with ``query_context``'s access policies.
    context = models.JSONField(default=dict, blank=True)
    first_seq = models.PositiveIntegerField()
    abort_requested = models.BooleanField(default=False)
    worker = models.CharField(max_length=200, blank=True, default="")
    heartbeat_at = models.DateTimeField()
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["thread_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["thread"], condition=Q(status="running"), name="run_one_running_per_thread"
            ),
            models.UniqueConstraint(fields=["thread", "message_id"], name="run_message_id_unique_per_thread"),
            models.CheckConstraint(
                condition=Q(status__in=["running", "completed", "failed", "aborted"]), name="run_status_valid"
            ),
        ]
        indexes = [models.Index(fields=["status", "heartbeat_at"], name="run_status_heartbeat")]

    def __str__(self) -> str:
        return f"run {self.message_id} of {self.thread_id} ({self.status})"


class ThreadEvent(models.Model):
    """One frame of a thread's stream, in order (``seq`` is dense per thread, from 1)."""

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="events")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    message = models.JSONField()

    class Meta:
        ordering = ["thread_id", "seq"]
        constraints = [models.UniqueConstraint(fields=["thread", "seq"], name="thread_event_seq_unique")]

    def __str__(self) -> str:
        return f"event {self.seq} of {self.thread_id}"
