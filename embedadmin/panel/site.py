"""The admin panel's site: who may log in, and what the header says."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.template.response import TemplateResponse

from embedadmin.panel import tenancy
from embedadmin.panel.overview import overview_of


class PanelAuthenticationForm(AdminAuthenticationForm):
    """Refuses at the login form whoever the panel would refuse afterwards (non-admin internal users)."""

    def confirm_login_allowed(self, user: Any) -> None:
        super().confirm_login_allowed(user)
        if not tenancy.viewer_of(user).may_use_panel:
            raise ValidationError(
                "This account may not use the admin panel: ask an administrator of your account.",
                code="not_panel_user",
            )


class PanelSite(admin.AdminSite):
    """Django admin for superusers and account administrators (see :mod:`embedadmin.panel.tenancy`)."""

    site_header = "embedadmin"
    site_title = "embedadmin panel"
    index_title = "Administration"
    login_form = PanelAuthenticationForm
    site_url = None  # the site root is this panel
    index_template = "panel/index.html"

    def get_app_list(self, request: HttpRequest, app_label: str | None = None) -> list[dict[str, Any]]:
        apps = super().get_app_list(request, app_label)
        for app in apps:
            if app["app_label"] == "auth":
                app["name"] = "Internal users"
        return apps

    def index(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> TemplateResponse:
        """The home page: the overview (:mod:`embedadmin.panel.overview`) above the list of what the panel
        administers."""
        viewer = tenancy.viewer(request)
        overview = overview_of(viewer)
        context = {
            **(extra_context or {}),
            "overview": overview,
            "overview_points": overview.per_day,
            "show_account_names": viewer.is_superuser,
        }
        return super().index(request, context)

    def has_permission(self, request: HttpRequest) -> bool:
        return tenancy.viewer(request).may_use_panel

    def each_context(self, request: HttpRequest) -> dict[str, Any]:
        context = super().each_context(request)
        account = tenancy.viewer(request).account
        if account is not None:
            context["site_header"] = f"embedadmin · {account.name}"
        return context


panel_site = PanelSite(name="admin")
