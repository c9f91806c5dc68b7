"""The audit log and the usage per day, read-only, each account administrator seeing their account's."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.html import format_html

from embedadmin.audit import selectors as audit_selectors
from embedadmin.audit.models import AuditEntry, DailyUsage
from embedadmin.panel import tenancy
from embedadmin.panel.panel_admin import PanelAdmin, page_context
from embedadmin.panel.site import panel_site


@admin.register(AuditEntry, site=panel_site)
class AuditEntryAdmin(PanelAdmin):
    list_display = ("occurred_at", "action", "resource_id", "actor", "via", "ip", "account")
    list_filter = ("via", "actor_kind", "resource_type", "account", "occurred_at")
    search_fields = ("action", "resource_id", "actor_label", "actor_owner", "ip")
    list_select_related = ("account",)
    date_hierarchy = "occurred_at"
    ordering = ("-id",)
    show_full_result_count = False  # a count(*) over the whole log on every page is not worth it
    fields = (
        "occurred_at",
        "account",
        "action",
        "resource_type",
        "resource_id",
        "actor_kind",
        "actor_id",
        "actor_label",
        "actor_owner",
        "via",
        "ip",
        "user_agent",
        "details_json",
    )
    readonly_fields = fields

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest) -> bool:
        # An object's "History" link (PanelAdmin.history_view) filters by resource.
        return lookup in ("resource_type__in", "resource_id") or super().lookup_allowed(lookup, value, request)

    @admin.display(description="by", ordering="actor_label")
    def actor(self, obj: AuditEntry) -> str:
        owner = f" of {obj.actor_owner}" if obj.actor_owner else ""
        return f"{obj.actor_label}{owner}"

    @admin.display(description="details")
    def details_json(self, obj: AuditEntry) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.details, indent=2, sort_keys=True))


def usage_cell(value: int | None) -> str:
    """A figure as the usage page shows it: grouped digits, or a dash for a user count not measured that day."""
    return "\N{EM DASH}" if value is None else f"{value:,}"


@admin.register(DailyUsage, site=panel_site)
class DailyUsageAdmin(PanelAdmin):
    """The account's usage per day, one column per kind: the figures, not the rows (a counter's day is spread over
    up to ``DailyUsage.SHARDS`` rows; ``audit.selectors.daily_totals`` sums them)."""

    DAYS = 60

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        since = timezone.now().date() - dt.timedelta(days=self.DAYS - 1)
        totals = audit_selectors.daily_totals(self.get_queryset(request).filter(day__gte=since))
        kinds = DailyUsage.Kind
        rows = [
            {"day": day, "account": account, "cells": [usage_cell(figures[kind]) for kind in kinds.values]}
            for (day, account), figures in sorted(totals.items(), reverse=True)
        ]
        context = {
            **page_context(self, request, title="Usage per day", obj=None),
            "columns": kinds.labels,
            "rows": rows,
            "days": self.DAYS,
            "show_account": tenancy.viewer(request).is_superuser,
        }
        return TemplateResponse(request, "panel/daily_usage.html", context)
