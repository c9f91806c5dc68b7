"""Panel page of embed sessions: read-only, their status, never the session id (only its digest exists)."""

from __future__ import annotations

import json

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html

from embedadmin.embedding.models import EmbedSession
from embedadmin.panel.panel_admin import PanelAdmin
from embedadmin.panel.site import panel_site


class SessionStatusFilter(admin.SimpleListFilter):
    """The states of :attr:`EmbedSession.status`, as queries."""

    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [(s, s) for s in ("pending", "exchanged", "expired", "revoked")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        now = timezone.now()
        live = queryset.filter(revoked_at__isnull=True)
        unused = live.filter(exchanged_at__isnull=True)
        by_status: dict[str | None, QuerySet] = {
            "revoked": queryset.filter(revoked_at__isnull=False),
            "exchanged": live.filter(exchanged_at__isnull=False),
            "expired": unused.filter(expires_at__lte=now),
            "pending": unused.filter(expires_at__gt=now),
        }
        return by_status.get(self.value(), queryset)


@admin.register(EmbedSession, site=panel_site)
class EmbedSessionAdmin(PanelAdmin):
    list_display = ("viewer", "status", "deployment", "embed_tenant", "creator_mode", "created_at", "account")
    list_display_links = ("viewer",)
    list_filter = (SessionStatusFilter, "creator_mode", "deployment", "embed_tenant", "account", "created_at")
    list_select_related = ("account", "deployment", "embed_tenant", "external_user", "internal_user")
    search_fields = ("public_id", "external_user__external_id", "internal_user__username")
    # key_digest is left out on purpose: nothing about the session id itself is shown.
    fields = (
        "public_id",
        "account",
        "deployment",
        "embed_tenant",
        "external_user",
        "internal_user",
        "creator_mode",
        "settings_json",
        "status",
        "created_at",
        "expires_at",
        "exchanged_at",
        "revoked_at",
        "claims_json",
    )
    readonly_fields = ("public_id", "status", "created_at", "settings_json", "claims_json")

    @admin.display(description="viewer")
    def viewer(self, obj: EmbedSession) -> str:
        return str(obj.external_user or obj.internal_user)

    @admin.display(description="embed settings")
    def settings_json(self, obj: EmbedSession) -> str:
        """What the host sent (showDashboardChat, allowAi, locale, timezone, embedTheme); the rest is the account's."""
        sent = {**obj.settings, **({"embedTheme": obj.embed_theme} if obj.embed_theme else {})}
        return format_html("<pre>{}</pre>", json.dumps(sent, indent=2, sort_keys=True)) if sent else "account defaults"

    @admin.display(description="claims")
    def claims_json(self, obj: EmbedSession) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.claims, indent=2, sort_keys=True))
