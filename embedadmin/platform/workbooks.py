"""Platform API v1, a deployment's workbooks (reference 2.1, embed access 1.7): ``GET|POST
/api/v1/deployments/{id}/workbooks``, ``PUT .../workbooks/by-slug/{slug}`` (an upsert), ``GET|PUT|DELETE
.../workbooks/{workbookId}``, and a workbook's dashboard draft (``PUT .../dashboard``), publishing (``POST
.../publish``) and embed access (``GET|PUT .../embed-access``).

Thin adapters over ``embedadmin.dashboards``, as :mod:`embedadmin.platform.platform_view` describes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from embedadmin.accounts.authentication import PlatformRequest
from embedadmin.accounts.models import Deployment
from embedadmin.core.edge.times import iso_time
from embedadmin.core.errors import BadRequest
from embedadmin.core.fields import (
    JsonObjectField,
    RejectUnknownFieldsMixin,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
)
from embedadmin.core.pagination import paginate
from embedadmin.dashboards import selectors
from embedadmin.dashboards import services as dashboards
from embedadmin.dashboards.models import Workbook
from embedadmin.dashboards.selectors import EmbedAccessState, PublishedDashboard
from embedadmin.platform.embed_dashboards import DASHBOARD, dashboard_answer, dashboard_item
from embedadmin.platform.folders import named_folder
from embedadmin.platform.openapi import INVALID, error, nullable, page_of, page_operation
from embedadmin.platform.platform_view import DEPLOYMENT_NOT_FOUND, ID_FILTER, PlatformView, id_param, validated_body

WORKBOOK = inline_serializer(
    "Workbook",
    {
        "id": serializers.IntegerField(),
        "deploymentId": serializers.IntegerField(),
        "name": serializers.CharField(),
        "slug": serializers.CharField(allow_null=True),
        "folderId": serializers.IntegerField(allow_null=True),
        "meta": serializers.JSONField(help_text="Any JSON value"),
        "dashboardDraft": serializers.JSONField(help_text="The draft config; null when none"),
        "dashboardPublished": serializers.JSONField(help_text="The newest published config; null before a publish"),
        "publishedDashboard": nullable(DASHBOARD),
        "createdAt": serializers.DateTimeField(),
        "updatedAt": serializers.DateTimeField(),
    },
)
WORKBOOK_DASHBOARD = inline_serializer(
    "WorkbookDashboard",
    {
        "dashboardDraft": serializers.JSONField(help_text="The draft config"),
        "dashboardPublished": serializers.JSONField(help_text="The newest published config; null before a publish"),
    },
)
_ACCESS_GRANT = inline_serializer(
    "EmbedAccessAllUsers",
    {
        "enabled": serializers.BooleanField(),
        "action": serializers.CharField(help_text="read when enabled, else none"),
        "groupId": serializers.IntegerField(allow_null=True, help_text="The id of the share"),
    },
)
EMBED_ACCESS = inline_serializer(
    "EmbedAccessResponse",
    {
        "allowEmbed": serializers.BooleanField(),
        "allEmbedUsers": _ACCESS_GRANT,
        "tenants": serializers.ListField(
            child=inline_serializer(
                "EmbedAccessTenant",
                {
                    "embedTenantName": serializers.CharField(),
                    "groupId": serializers.IntegerField(help_text="The id of the share"),
                    "action": serializers.CharField(help_text="read"),
                },
            )
        ),
    },
)
WORKBOOK_NOT_FOUND = error("No workbook with this id in the deployment (or the deployment is not the caller's)")


def workbook_item(workbook: Workbook, published: Mapping[int, PublishedDashboard]) -> dict[str, Any]:
    """Cube's ``Workbook``; ``published`` holds the newest version of its dashboard (by dashboard id) if any."""
    dashboard = getattr(workbook, "dashboard", None)
    version = published.get(dashboard.pk) if dashboard is not None else None
    return {
        "id": workbook.pk,
        "deploymentId": workbook.deployment_id,
        "name": workbook.name,
        "slug": workbook.slug,
        "folderId": workbook.folder_id,
        "meta": workbook.meta,
        "dashboardDraft": workbook.dashboard_draft,
        "dashboardPublished": version.version.config if version is not None else None,
        "publishedDashboard": dashboard_item(dashboard, version) if dashboard is not None else None,
        "createdAt": iso_time(workbook.created_at),
        "updatedAt": iso_time(workbook.updated_at),
    }


def _workbook_answer(workbook_id: int, deployment: Deployment) -> dict[str, Any]:
    workbook = selectors.workbook_of(deployment=deployment, workbook_id=workbook_id)
    dashboard = getattr(workbook, "dashboard", None)
    published = selectors.published_of_many(dashboards=[dashboard]) if dashboard is not None else {}
    return workbook_item(workbook, published)


def embed_access_item(state: EmbedAccessState) -> dict[str, Any]:
    """Cube's ``EmbedAccessResponse``; ``groupId`` is the id of the share."""
    everyone = state.all_embed_users
    return {
        "allowEmbed": state.allow_embed,
        "allEmbedUsers": {
            "enabled": everyone is not None,
            "action": "read" if everyone is not None else "none",
            "groupId": everyone.pk if everyone is not None else None,
        },
        "tenants": [
            {"embedTenantName": name, "groupId": row.pk, "action": "read"}
            for name, row in zip(state.tenant_names(), state.tenants, strict=True)
        ],
    }


class WorkbookCreateSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    name = StrictCharField(required=False, max_length=255)
    folderId = StrictIntegerField(required=False, allow_null=True)
    meta = JsonObjectField(required=False)


class WorkbookUpdateSerializer(WorkbookCreateSerializer):
    slug = StrictCharField(required=False, allow_null=True, max_length=255)


def _workbook_changes(deployment: Deployment, data: Mapping[str, Any]) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    if "name" in data:
        changes["name"] = data["name"]
    if "meta" in data:
        changes["meta"] = data["meta"]
    if "folderId" in data:
        changes["folder"] = named_folder(deployment, data["folderId"])
    if "slug" in data:
        changes["slug"] = data["slug"]
    return changes


class WorkbookListView(PlatformView):
    audit_resource = "workbook"

    @page_operation(
        page_of("WorkbookPage", WORKBOOK, data=True, count=True),
        operation_id="deployments_workbooks_list",
        filters=[
            OpenApiParameter(
                "folderId",
                {"oneOf": [ID_FILTER, {"type": "string", "enum": ["null"]}]},
                description="Workbooks of this folder; `null` for those at the root; every workbook when left out",
            )
        ],
        errors={404: DEPLOYMENT_NOT_FOUND},
    )
    def get(self, request: PlatformRequest, deployment_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        params = request.query_params
        in_root = params.get("folderId") == "null"
        folder_id = None if in_root else id_param(params, "folderId")
        rows = selectors.workbooks_of(deployment=deployment, folder_id=folder_id, in_root=in_root)
        page = paginate(rows, params=params)
        dashboards = [wb.dashboard for wb in page.items if getattr(wb, "dashboard", None) is not None]
        published = selectors.published_of_many(dashboards=dashboards)
        body = page.as_dict(lambda wb: workbook_item(wb, published))
        body["data"] = body["items"]
        body["count"] = rows.count()
        return Response(body)

    @extend_schema(
        request=WorkbookCreateSerializer,
        responses={
            201: WORKBOOK,
            400: error("Invalid input, or folderId is not a folder of the deployment"),
            404: DEPLOYMENT_NOT_FOUND,
        },
    )
    def post(self, request: PlatformRequest, deployment_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        data = validated_body(WorkbookCreateSerializer, request)
        workbook = dashboards.workbook_create(deployment=deployment, changes=_workbook_changes(deployment, data))
        return Response(_workbook_answer(workbook.pk, deployment), status=201)


class WorkbookDetailView(PlatformView):
    audit_resource = "workbook"

    @extend_schema(responses={200: WORKBOOK, 404: WORKBOOK_NOT_FOUND})
    def get(self, request: PlatformRequest, deployment_id: int, workbook_id: int) -> Response:
        return Response(_workbook_answer(workbook_id, self.deployment(request, deployment_id)))

    @extend_schema(
        request=WorkbookUpdateSerializer,
        responses={
            200: WORKBOOK,
            400: error("Invalid input, or folderId is not a folder of the deployment"),
            404: WORKBOOK_NOT_FOUND,
            409: error("Another workbook of the deployment has this slug"),
        },
    )
    def put(self, request: PlatformRequest, deployment_id: int, workbook_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        workbook = selectors.workbook_of(deployment=deployment, workbook_id=workbook_id)
        data = validated_body(WorkbookUpdateSerializer, request)
        dashboards.workbook_update(workbook=workbook, changes=_workbook_changes(deployment, data))
        return Response(_workbook_answer(workbook.pk, deployment))

    @extend_schema(responses={204: None, 404: WORKBOOK_NOT_FOUND})
    def delete(self, request: PlatformRequest, deployment_id: int, workbook_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        dashboards.workbook_delete(workbook=selectors.workbook_of(deployment=deployment, workbook_id=workbook_id))
        return Response(status=204)


class WorkbookBySlugView(PlatformView):
    audit_resource = "workbook"
    audit_verbs = {"PUT": "upsert"}
    audit_id_from_answer = True  # addressed by slug, named by id (an object's history in the panel finds it)

    @extend_schema(
        request=WorkbookCreateSerializer,
        responses={
            200: OpenApiResponse(WORKBOOK, description="The workbook with this slug, created or updated"),
            400: error("Invalid input or slug, or folderId is not a folder of the deployment"),
            404: DEPLOYMENT_NOT_FOUND,
        },
    )
    def put(self, request: PlatformRequest, deployment_id: int, slug: str) -> Response:
        deployment = self.deployment(request, deployment_id)
        data = validated_body(WorkbookCreateSerializer, request)
        workbook = dashboards.workbook_upsert_by_slug(
            deployment=deployment, slug=slug, changes=_workbook_changes(deployment, data)
        )
        return Response(_workbook_answer(workbook.pk, deployment))


class WorkbookDashboardSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    dashboardDraft = JsonObjectField()


class WorkbookDashboardView(PlatformView):
    audit_resource = "dashboard"
    audit_verbs = {"PUT": "update"}
    audit_id_kwarg = "workbook_id"

    @extend_schema(
        request=WorkbookDashboardSerializer,
        responses={
            200: WORKBOOK_DASHBOARD,
            400: error("Invalid input, or a draft that does not validate against the data model"),
            404: WORKBOOK_NOT_FOUND,
        },
    )
    def put(self, request: PlatformRequest, deployment_id: int, workbook_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        workbook = selectors.workbook_of(deployment=deployment, workbook_id=workbook_id)
        data = validated_body(WorkbookDashboardSerializer, request)
        workbook = dashboards.workbook_dashboard_set(workbook=workbook, draft=data["dashboardDraft"])
        answer = _workbook_answer(workbook.pk, deployment)
        return Response(
            {"dashboardDraft": answer["dashboardDraft"], "dashboardPublished": answer["dashboardPublished"]}
        )


class PublishSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    workbookId = StrictIntegerField(required=False)
    title = StrictCharField(required=False, allow_blank=True, max_length=255)
    description = StrictCharField(required=False, allow_blank=True)
    allowEmbed = StrictBooleanField(required=False)


class WorkbookPublishView(PlatformView):
    audit_resource = "workbook"
    audit_verbs = {"POST": "publish"}

    @extend_schema(
        request=PublishSerializer,
        responses={
            200: DASHBOARD,
            400: error("Invalid input, workbookId is not the path's, or no draft to publish"),
            404: WORKBOOK_NOT_FOUND,
        },
    )
    def post(self, request: PlatformRequest, deployment_id: int, workbook_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        workbook = selectors.workbook_of(deployment=deployment, workbook_id=workbook_id)
        data = validated_body(PublishSerializer, request)
        if "workbookId" in data and data["workbookId"] != workbook.pk:
            raise BadRequest(f"workbookId {data['workbookId']} does not match the workbook of the path ({workbook.pk})")
        dashboard = dashboards.workbook_publish(
            workbook=workbook,
            title=data.get("title"),
            description=data.get("description"),
            allow_embed=data.get("allowEmbed"),
            published_by=request.user.token.name,
        )
        return Response(dashboard_answer(dashboard))


class EmbedAccessSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    embedTenantName = StrictCharField(required=False, max_length=36)
    allEmbedUsers = StrictBooleanField(required=False)
    action = serializers.ChoiceField(choices=dashboards.EMBED_ACTIONS, required=False)
    allowEmbed = StrictBooleanField(required=False)


class WorkbookEmbedAccessView(PlatformView):
    audit_resource = "embed_access"
    audit_verbs = {"PUT": "update"}
    audit_id_kwarg = "workbook_id"

    @extend_schema(responses={200: EMBED_ACCESS, 404: WORKBOOK_NOT_FOUND})
    def get(self, request: PlatformRequest, deployment_id: int, workbook_id: int) -> Response:
        workbook = selectors.workbook_of(deployment=self.deployment(request, deployment_id), workbook_id=workbook_id)
        return Response(embed_access_item(selectors.embed_access_of(workbook=workbook)))

    @extend_schema(
        request=EmbedAccessSerializer,
        responses={
            200: EMBED_ACCESS,
            400: INVALID,
            404: error("No such workbook, or no embed tenant named embedTenantName in the account"),
        },
    )
    def put(self, request: PlatformRequest, deployment_id: int, workbook_id: int) -> Response:
        workbook = selectors.workbook_of(deployment=self.deployment(request, deployment_id), workbook_id=workbook_id)
        data = validated_body(EmbedAccessSerializer, request)
        state = dashboards.embed_access_update(
            workbook=workbook,
            embed_tenant_name=data.get("embedTenantName"),
            all_embed_users=data.get("allEmbedUsers", False),
            action=data.get("action"),
            allow_embed=data.get("allowEmbed"),
        )
        return Response(embed_access_item(state))
