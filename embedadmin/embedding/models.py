"""Embed sessions: single-use, short-lived grants a host back end mints for one viewer."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from embedadmin.accounts.models import Account, Deployment
from embedadmin.directory.models import EmbedTenant, ExternalUser


class EmbedSession(models.Model):
    """A minted ``sessionId`` (stored as its SHA-256 digest) and what it grants.

    ``claims`` is the resolved identity at minting time (security context, groups, user attributes,
    profile): the token the session is exchanged for carries exactly what the host asked for, even if
    the directory changes in the minutes between. ``public_id`` is the token's ``jti``, the handle
    by which a revoked session's token is refused.
    """

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    key_digest = models.CharField(max_length=64, unique=True)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="embed_sessions")
    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="embed_sessions")
    embed_tenant = models.ForeignKey(EmbedTenant, on_delete=models.SET_NULL, null=True, blank=True)
    external_user = models.ForeignKey(
        ExternalUser, on_delete=models.CASCADE, null=True, blank=True, related_name="sessions"
    )
    internal_user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True)
    creator_mode = models.BooleanField(default=False)
    # The session's embed settings as the host sent them (showDashboardChat, allowAi, allowExport, locale, timezone;
    # a key left out or null inherits the account default at exchange time) and its embedTheme.
    settings = models.JSONField(default=dict, blank=True)
    embed_theme = models.JSONField(default=dict, blank=True)
    claims = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    expires_at = models.DateTimeField()
    exchanged_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(external_user__isnull=True) ^ models.Q(internal_user__isnull=True),
                name="embed_session_exactly_one_user",
            )
        ]

    def __str__(self) -> str:
        who = self.external_user or self.internal_user
        return f"session {self.public_id} for {who}"

    @property
    def show_dashboard_chat(self) -> bool | None:
        """The session's own ``showDashboardChat`` (None: inherits the account's)."""
        value = self.settings.get("showDashboardChat")
        return value if isinstance(value, bool) else None

    @property
    def status(self) -> str:
        from django.utils import timezone

        if self.revoked_at:
            return "revoked"
        if self.exchanged_at:
            return "exchanged"
        if self.expires_at <= timezone.now():
            return "expired"
        return "pending"
