"""Platform API v1 (``Authorization: Bearer <platform token>``): thin adapters over the services."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from embedadmin.accounts import selectors as accounts_selectors
from embedadmin.accounts import services as accounts
from embedadmin.accounts.authentication import IsPlatformCaller, PlatformRequest, PlatformTokenAuthentication
from embedadmin.accounts.models import Deployment, TenantSettings
from embedadmin.audit.audited_views import AuditedView
from embedadmin.core.edge.bodies import json_object_body
from embedadmin.core.fields import RejectUnknownFieldsMixin, StrictBooleanField, StrictCharField, StrictEmailField
from embedadmin.core.pagination import paginate
from embedadmin.embedding import internal_users as user_lifecycle
from embedadmin.platform.openapi import EMBED_THEME, INVALID, PAGE_PARAMETERS, error, optional, page_of


class PlatformView(AuditedView):
    """A Platform API view: a platform token's account; its writes audited (``audit_resource``)."""

    authentication_classes = [PlatformTokenAuthentication]
    permission_classes = [IsPlatformCaller]

    def deployment(self, request: PlatformRequest, deployment_id: str | int) -> Deployment:
        """The caller's account's deployment ``deployment_id`` (a route's or a body's); 404 for any other."""
        return accounts_selectors.deployment_of(account=request.user.account, deployment_id=deployment_id)


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


class InternalUserSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    username = StrictCharField(max_length=150)
    email = StrictEmailField(required=False, allow_blank=True, max_length=254)  # the stored column's length
    isAdmin = StrictBooleanField(required=False, default=False)


def _internal_user_fields(*, role: bool = False) -> dict[str, serializers.Field]:
    """Fresh fields for each shape: ``inline_serializer`` takes the dict it is given as class attributes, and the
    serializer metaclass pops the fields out of it (a shared dict would leave the second shape empty)."""
    fields: dict[str, serializers.Field] = {
        "id": serializers.IntegerField(),
        "username": serializers.CharField(),
        "email": serializers.CharField(allow_blank=True),
        "isAdmin": serializers.BooleanField(),
        "isActive": serializers.BooleanField(),
    }
    if role:
        fields["role"] = serializers.ChoiceField(choices=["admin", "member"])
    return fields


INTERNAL_USER = inline_serializer("InternalUser", _internal_user_fields())
INTERNAL_USER_DETAIL = inline_serializer("InternalUserDetail", _internal_user_fields(role=True))
USER_NOT_FOUND = error("No internal user with this id in the caller's account")
USERNAME_TAKEN = error("A user with this username already exists")


def internal_user_item(user) -> dict[str, Any]:
    return {
        "id": user.pk,
        "username": user.username,
        "email": user.email,
        "isAdmin": user.membership.is_admin,
        "isActive": user.is_active,
    }


class UserListView(PlatformView):
    audit_resource = "user"

    @extend_schema(
        operation_id="users_list",
        parameters=PAGE_PARAMETERS,
        responses={200: page_of("InternalUserPage", INTERNAL_USER), 400: INVALID},
    )
    def get(self, request: PlatformRequest) -> Response:
        users = accounts_selectors.internal_users_of(account=request.user.account)
        page = paginate(users, params=request.query_params)
        return Response(page.as_dict(internal_user_item))

    @extend_schema(request=InternalUserSerializer, responses={201: INTERNAL_USER, 400: INVALID, 409: USERNAME_TAKEN})
    def post(self, request: PlatformRequest) -> Response:
        serializer = InternalUserSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        user = accounts.internal_user_create(
            account=request.user.account,
            username=data["username"],
            email=data.get("email", ""),
            is_admin=data["isAdmin"],
        )
        return Response(internal_user_item(user), status=201)


class InternalUserUpdateSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """``PATCH /api/v1/users/{id}``: email, the role (``role`` admin|member, or ``isAdmin``) and ``isActive``."""

    email = StrictEmailField(required=False, allow_blank=True, max_length=254)
    isAdmin = StrictBooleanField(required=False)
    role = serializers.ChoiceField(choices=["admin", "member"], required=False)
    isActive = StrictBooleanField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "role" in attrs and "isAdmin" in attrs and (attrs["role"] == "admin") != attrs["isAdmin"]:
            raise serializers.ValidationError("role and isAdmin disagree")
        return attrs


def internal_user_detail(user) -> dict[str, Any]:
    return {**internal_user_item(user), "role": "admin" if user.membership.is_admin else "member"}


class UserDetailView(PlatformView):
    """``/api/v1/users/{id}``: get, update (email, role, active) and delete an internal user, through the same
    services as SCIM (a deactivation revokes the user's sessions, tokens and keys at once)."""

    audit_resource = "user"

    def _user(self, request: PlatformRequest, user_id: str):
        return accounts_selectors.internal_user_of(account=request.user.account, user_id=user_id)

    @extend_schema(responses={200: INTERNAL_USER_DETAIL, 404: USER_NOT_FOUND})
    def get(self, request: PlatformRequest, user_id: str) -> Response:
        return Response(internal_user_detail(self._user(request, user_id)))

    @extend_schema(
        request=InternalUserUpdateSerializer,
        responses={200: INTERNAL_USER_DETAIL, 400: INVALID, 404: USER_NOT_FOUND},
    )
    def patch(self, request: PlatformRequest, user_id: str) -> Response:
        user = self._user(request, user_id)
        serializer = InternalUserUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        is_admin = data.get("isAdmin", data["role"] == "admin" if "role" in data else None)
        user_lifecycle.internal_user_save(
            account=request.user.account,
            user=user,
            changes=accounts.InternalUserChanges(
                email=data.get("email"), is_admin=is_admin, is_active=data.get("isActive")
            ),
        )
        return Response(internal_user_detail(self._user(request, user_id)))

    put = patch

    @extend_schema(responses={204: None, 404: USER_NOT_FOUND})
    def delete(self, request: PlatformRequest, user_id: str) -> Response:
        user_lifecycle.internal_user_remove(user=self._user(request, user_id))
        return Response(status=204)


class UserDeactivateView(PlatformView):
    """``POST /api/v1/users/{id}/deactivate``: the same as ``PATCH {"isActive": false}``."""

    audit_resource = "user"
    audit_verbs = {"POST": "deactivate"}

    @extend_schema(request=None, responses={200: INTERNAL_USER_DETAIL, 404: USER_NOT_FOUND})
    def post(self, request: PlatformRequest, user_id: str) -> Response:
        user = accounts_selectors.internal_user_of(account=request.user.account, user_id=user_id)
        user_lifecycle.internal_user_deactivate(account=request.user.account, user=user)
        user = accounts_selectors.internal_user_of(account=request.user.account, user_id=user_id)
        return Response(internal_user_detail(user))


DEPLOYMENT_SUMMARY = inline_serializer(
    "DeploymentSummary",
    {"id": serializers.IntegerField(), "name": serializers.CharField(), "slug": serializers.CharField()},
)


class DeploymentListView(PlatformView):
    @extend_schema(
        operation_id="deployments_list",
        parameters=PAGE_PARAMETERS,
        responses={200: page_of("DeploymentSummaryPage", DEPLOYMENT_SUMMARY), 400: INVALID},
    )
    def get(self, request: PlatformRequest) -> Response:
        deployments = accounts_selectors.deployments_of(account=request.user.account)
        page = paginate(deployments, params=request.query_params)
        return Response(page.as_dict(lambda d: {"id": d.pk, "name": d.name, "slug": d.slug}))
