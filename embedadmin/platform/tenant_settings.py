"""Platform API v1, the account's tenant settings: ``GET|PATCH /api/v1/tenant/settings`` (embed defaults, allowed
origins, theme, user caps) and ``GET /api/v1/app-config``, the same settings as Cube's ``AppConfigResponse``."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from embedadmin.accounts import selectors as accounts_selectors
from embedadmin.accounts import services as accounts
from embedadmin.accounts.authentication import PlatformRequest
from embedadmin.accounts.models import TenantSettings
from embedadmin.core.edge.bodies import json_object_body
from embedadmin.platform.openapi import EMBED_THEME, error, optional
from embedadmin.platform.platform_view import PlatformView


def tenant_settings_item(row: TenantSettings) -> dict[str, Any]:
    return {
        "useCreatorMode": row.use_creator_mode,
        "showDashboardChat": row.show_dashboard_chat,
        "allowAi": row.allow_ai,
        "allowExport": row.allow_export,
        "locale": row.embed_locale,
        "timezone": row.embed_timezone,
        "restrictDataDownload": row.restrict_data_download,
        "embedAllowedOrigins": list(row.embed_allowed_origins),
        "embedTheme": row.embed_theme,
        "maxExternalUsers": row.max_external_users,
        "maxNonEphemeralChatUsers": row.max_non_ephemeral_chat_users,
        "externalUserCount": row.external_user_count,
        "nonEphemeralChatUserCount": row.non_ephemeral_chat_user_count,
    }


_COUNT_MAX = 2**31 - 1
TENANT_SETTINGS = inline_serializer(
    "TenantSettings",
    {
        "useCreatorMode": serializers.BooleanField(),
        "showDashboardChat": serializers.BooleanField(),
        "allowAi": serializers.BooleanField(),
        "allowExport": serializers.BooleanField(
            help_text="Default of a session's allowExport: whether embed viewers may download data (CSV, PNG)"
        ),
        "locale": serializers.CharField(help_text="BCP-47 language tag of embeds, such as en-US"),
        "timezone": serializers.CharField(help_text="IANA time zone of embeds, such as Europe/Paris"),
        "restrictDataDownload": serializers.BooleanField(),
        "embedAllowedOrigins": serializers.ListField(child=serializers.CharField()),
        "embedTheme": EMBED_THEME,
        "maxExternalUsers": serializers.IntegerField(),
        "maxNonEphemeralChatUsers": serializers.IntegerField(),
        "externalUserCount": serializers.IntegerField(),
        "nonEphemeralChatUserCount": serializers.IntegerField(),
    },
)
TENANT_SETTINGS_CHANGES = inline_serializer(
    "TenantSettingsChanges",
    {
        "useCreatorMode": serializers.BooleanField(required=False),
        "showDashboardChat": serializers.BooleanField(required=False),
        "allowAi": serializers.BooleanField(required=False),
        "allowExport": serializers.BooleanField(required=False),
        "locale": serializers.CharField(required=False, max_length=35, help_text="BCP-47 language tag"),
        "timezone": serializers.CharField(required=False, help_text="IANA time zone name"),
        "restrictDataDownload": serializers.BooleanField(required=False),
        "embedAllowedOrigins": serializers.ListField(
            child=serializers.CharField(help_text="scheme://host[:port], http or https"), required=False, max_length=50
        ),
        "embedTheme": optional(EMBED_THEME),
        "maxExternalUsers": serializers.IntegerField(required=False, min_value=0, max_value=_COUNT_MAX),
        "maxNonEphemeralChatUsers": serializers.IntegerField(required=False, min_value=0, max_value=_COUNT_MAX),
    },
)


class TenantSettingsView(PlatformView):
    audit_resource = "tenant_settings"

    @extend_schema(responses={200: TENANT_SETTINGS})
    def get(self, request: PlatformRequest) -> Response:
        return Response(tenant_settings_item(accounts_selectors.tenant_settings_of(account=request.user.account)))

    @extend_schema(
        request=TENANT_SETTINGS_CHANGES,
        responses={200: TENANT_SETTINGS, 400: error("Not a JSON object, an unknown setting or an invalid value")},
    )
    def patch(self, request: PlatformRequest) -> Response:
        changes = json_object_body(request, fields=None)
        row = accounts.tenant_settings_update(account=request.user.account, changes=changes)
        return Response(tenant_settings_item(row))


def app_theme(theme: dict[str, Any]) -> dict[str, Any]:
    """Cube's ``appTheme`` (reference 1.8) from the account's embed theme: its accent color and body font."""
    palette: dict[str, Any] = {"surfaceMode": "neutral"}
    if theme.get("primaryColor"):
        palette["accent"] = theme["primaryColor"]
    typography: dict[str, Any] = {"fonts": []}
    if theme.get("font"):
        typography["fonts"] = [{"id": "embed", "family": theme["font"], "name": theme["font"]}]
        typography["body"] = {"fontRef": "embed"}
        typography["heading"] = {"fontRef": "embed"}
    return {"palette": palette, "logoUrl": None, "typography": typography}


_NULL_STRING = {"type": ["string", "null"]}
APP_CONFIG = {
    "type": "object",
    "description": "Cube's AppConfigResponse",
    "properties": {
        "applyThemeGlobally": {"type": "boolean"},
        "restrictDataDownload": {"type": "boolean"},
        "sheetsAgentChatEnabled": {"type": "boolean"},
        "appTheme": {
            "type": "object",
            "properties": {
                "palette": {"type": "object"},
                "logoUrl": _NULL_STRING,
                "typography": {"type": "object", "properties": {"fonts": {"type": "array"}}},
            },
            "required": ["palette", "logoUrl", "typography"],
        },
        "creatorMode": {
            "type": "object",
            "properties": {
                "workspaceTitle": _NULL_STRING,
                "showWorkspaceTitle": {"type": "boolean"},
                "localizedTitles": {"type": "array"},
                "showSemanticSql": {"type": "boolean"},
                "showGeneratedSql": {"type": "boolean"},
            },
        },
        "embedding": {
            "type": "object",
            "properties": {
                "allowAi": {"type": "boolean"},
                "enableDashboardComments": {"type": "boolean"},
                "locale": {"type": "string"},
                "showAiWidgets": {"type": "boolean"},
                "showDashboardChat": {"type": "boolean"},
                "showWorkbookChat": {"type": "boolean"},
                "timezone": {"type": "string"},
            },
        },
        "timezoneSettings": {
            "type": "object",
            "properties": {
                "enabled": {"type": "boolean"},
                "timezone": {"type": "string"},
                "allowUserOverride": {"type": "boolean"},
            },
        },
        "sheetsUi": {"type": "object", "properties": {"showAppliedFilters": {"type": "boolean"}}},
    },
    "required": [
        "applyThemeGlobally",
        "restrictDataDownload",
        "sheetsAgentChatEnabled",
        "appTheme",
        "creatorMode",
        "embedding",
        "timezoneSettings",
        "sheetsUi",
    ],
}


class AppConfigView(PlatformView):
    """``GET /api/v1/app-config``: Cube's ``AppConfigResponse`` with the account's embedding defaults and theme."""

    @extend_schema(responses={200: APP_CONFIG})
    def get(self, request: PlatformRequest) -> Response:
        row = accounts_selectors.tenant_settings_of(account=request.user.account)
        return Response(
            {
                "applyThemeGlobally": False,
                "restrictDataDownload": row.restrict_data_download,
                "sheetsAgentChatEnabled": False,
                "appTheme": app_theme(row.embed_theme or {}),
                "creatorMode": {
                    "workspaceTitle": None,
                    "showWorkspaceTitle": False,
                    "localizedTitles": [],
                    "showSemanticSql": False,
                    "showGeneratedSql": False,
                },
                "embedding": {
                    "allowAi": row.allow_ai,
                    "enableDashboardComments": False,
                    "locale": row.embed_locale,
                    "showAiWidgets": False,
                    "showDashboardChat": row.show_dashboard_chat,
                    "showWorkbookChat": False,
                    "timezone": row.embed_timezone,
                },
                "timezoneSettings": {"enabled": True, "timezone": row.embed_timezone, "allowUserOverride": True},
                "sheetsUi": {"showAppliedFilters": True},
            }
        )
