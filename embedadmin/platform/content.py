"""Platform API v1, workspace content (reference sections 1.7, 2.1-2.3): workbooks, reports, folders, dashboard
drafts, publishing, embed access, and ``GET|PATCH /api/v1/embed/dashboard/{publicId}``.

Thin adapters: each view resolves the caller's deployment (another account's is 404), checks the body with its
own serializer (unknown fields, wrong JSON types: 400), calls one service or selector of ``embedadmin.dashboards``
and shapes Cube's camelCase answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from embedadmin.accounts.authentication import PlatformRequest
from embedadmin.accounts.models import Deployment
from embedadmin.core.edge.ids import row_id
from embedadmin.core.edge.times import iso_time
from embedadmin.core.errors import BadRequest, NotFound
from embedadmin.core.fields import (
    JsonObjectField,
    JsonValueField,
    RejectUnknownFieldsMixin,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
)
from embedadmin.core.pagination import paginate
from embedadmin.dashboards import selectors
from embedadmin.dashboards import services as dashboards
from embedadmin.dashboards.models import Dashboard, Folder, Report, ReportSnapshot, Workbook
from embedadmin.dashboards.selectors import EmbedAccessState, PublishedDashboard
from embedadmin.platform.openapi import INVALID, PAGE_PARAMETERS, error, list_of, many, nullable, page_of, whole
from embedadmin.platform.views import PlatformView

# --- shapes ------------------------------------------------------------------------------------------

REPORT_SNAPSHOT = inline_serializer(
    "ReportSnapshot",
    {
        "id": serializers.IntegerField(),
        "reportId": serializers.IntegerField(allow_null=True, help_text="null once the report is deleted"),
        "publicId": serializers.CharField(),
        "versionNumber": serializers.IntegerField(),
        "kind": serializers.CharField(help_text=", ".join(ReportSnapshot.Kind.values)),
        "spec": serializers.JSONField(help_text="Any JSON value"),
        "jsonQuery": serializers.JSONField(help_text="Any JSON value"),
        "meta": serializers.JSONField(help_text="Any JSON value"),
    },
)
DASHBOARD = inline_serializer(
    "Dashboard",
    {
        "id": serializers.IntegerField(),
        "publicId": serializers.CharField(),
        "deploymentId": serializers.IntegerField(),
        "workbookId": serializers.IntegerField(),
        "status": serializers.ChoiceField(choices=Dashboard.Status.values),
        "allowEmbed": serializers.BooleanField(),
        "config": serializers.JSONField(help_text="The published config; null before a publish"),
        "versionNumber": serializers.IntegerField(),
        "versionId": serializers.IntegerField(allow_null=True),
        "reportSnapshots": many(REPORT_SNAPSHOT),
        "title": serializers.CharField(allow_blank=True),
        "description": serializers.CharField(allow_blank=True),
    },
)
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
REPORT = inline_serializer(
    "Report",
    {
        "id": serializers.IntegerField(),
        "deploymentId": serializers.IntegerField(),
        "publicId": serializers.CharField(),
        "name": serializers.CharField(),
        "title": serializers.CharField(allow_blank=True),
        "description": serializers.CharField(allow_blank=True),
        "jsonQuery": serializers.CharField(allow_blank=True, help_text="The Cube query as JSON text; empty if none"),
        "sqlQuery": serializers.CharField(allow_blank=True),
        "pivotItems": serializers.JSONField(help_text="Any JSON value; null when none"),
        "meta": serializers.JSONField(help_text="Any JSON value"),
        "source": serializers.ChoiceField(choices=Report.Source.values),
        "workbookId": serializers.IntegerField(allow_null=True),
        "folderId": serializers.IntegerField(allow_null=True),
        "version": serializers.IntegerField(),
        "createdAt": serializers.DateTimeField(),
        "updatedAt": serializers.DateTimeField(),
    },
)
FOLDER = inline_serializer(
    "Folder",
    {
        "id": serializers.IntegerField(),
        "name": serializers.CharField(),
        "parentId": serializers.IntegerField(allow_null=True),
        "position": serializers.IntegerField(),
        "type": serializers.CharField(help_text="FOLDER"),
        "createdAt": serializers.DateTimeField(),
        "updatedAt": serializers.DateTimeField(),
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
EMBED_DASHBOARD_STATE = inline_serializer(
    "EmbedDashboardState", {"publicId": serializers.CharField(), "allowEmbed": serializers.BooleanField()}
)
_ID_FILTER = {"type": "integer", "minimum": 1}
WORKBOOK_NOT_FOUND = error("No workbook with this id in the deployment (or the deployment is not the caller's)")
REPORT_NOT_FOUND = error("No report with this id in the deployment (or the deployment is not the caller's)")
FOLDER_NOT_FOUND = error("No folder with this id in the deployment (or the deployment is not the caller's)")
DEPLOYMENT_NOT_FOUND = error("No deployment with this id in the caller's account")


def snapshot_item(snapshot: ReportSnapshot) -> dict[str, Any]:
    return {
        "id": snapshot.pk,
        "reportId": snapshot.report_id,
        "publicId": snapshot.report_public_id,
        "versionNumber": snapshot.report_version,
        "kind": snapshot.kind,
        "spec": snapshot.spec,
        "jsonQuery": snapshot.json_query,
        "meta": snapshot.meta,
    }


def dashboard_item(dashboard: Dashboard, published: PublishedDashboard | None) -> dict[str, Any]:
    """Cube's ``Dashboard``: the published face of a workbook and its newest version."""
    return {
        "id": dashboard.pk,
        "publicId": dashboard.public_id,
        "deploymentId": dashboard.deployment_id,
        "workbookId": dashboard.workbook_id,
        "status": dashboard.status,
        "allowEmbed": dashboard.allow_embed,
        "config": published.version.config if published is not None else None,
        "versionNumber": dashboard.version_number,
        "versionId": published.version.pk if published is not None else None,
        "reportSnapshots": [snapshot_item(s) for s in published.snapshots] if published is not None else [],
        "title": dashboard.title,
        "description": dashboard.description,
    }


def _dashboard_answer(dashboard: Dashboard) -> dict[str, Any]:
    return dashboard_item(dashboard, selectors.published_of(dashboard=dashboard))


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


def report_item(report: Report) -> dict[str, Any]:
    """Cube's ``Report``."""
    return {
        "id": report.pk,
        "deploymentId": report.deployment_id,
        "publicId": report.public_id,
        "name": report.name,
        "title": report.title,
        "description": report.description,
        "jsonQuery": report.json_query,
        "sqlQuery": report.sql_query,
        "pivotItems": report.pivot_items,
        "meta": report.meta,
        "source": report.source,
        "workbookId": report.workbook_id,
        "folderId": report.folder_id,
        "version": report.version,
        "createdAt": iso_time(report.created_at),
        "updatedAt": iso_time(report.updated_at),
    }


def folder_item(folder: Folder) -> dict[str, Any]:
    """Cube's ``Folder``."""
    return {
        "id": folder.pk,
        "name": folder.name,
        "parentId": folder.parent_id,
        "position": folder.position,
        "type": "FOLDER",
        "createdAt": iso_time(folder.created_at),
        "updatedAt": iso_time(folder.updated_at),
    }


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


def _list_answer(queryset: QuerySet[Any], params: Mapping[str, str], shape: Any) -> dict[str, Any]:
    """``{items, pageInfo}`` with Cube's deprecated ``data`` (the same items) and ``count`` (all matches)."""
    page = paginate(queryset, params=params)
    body = page.as_dict(shape)
    body["data"] = body["items"]
    body["count"] = queryset.count()
    return body


# --- inputs ------------------------------------------------------------------------------------------


def _validated(serializer_class: type[serializers.Serializer[Any]], request: PlatformRequest) -> dict[str, Any]:
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _id_param(params: Mapping[str, str], name: str) -> int | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    number = row_id(raw)
    if number is None:
        raise BadRequest(f"{name} must be a positive integer")
    return number


def _folder(deployment: Deployment, folder_id: int | None, field: str = "folderId") -> Folder | None:
    if folder_id is None:
        return None
    try:
        return selectors.folder_of(deployment=deployment, folder_id=folder_id)
    except NotFound:
        raise BadRequest(f"{field}: folder {folder_id} not found in this deployment") from None


def _workbook(deployment: Deployment, workbook_id: int | None) -> Workbook | None:
    if workbook_id is None:
        return None
    try:
        return selectors.workbook_of(deployment=deployment, workbook_id=workbook_id)
    except NotFound:
        raise BadRequest(f"workbookId: workbook {workbook_id} not found in this deployment") from None


# --- workbooks ---------------------------------------------------------------------------------------


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
        changes["folder"] = _folder(deployment, data["folderId"])
    if "slug" in data:
        changes["slug"] = data["slug"]
    return changes


class WorkbookListView(PlatformView):
    audit_resource = "workbook"

    @extend_schema(
        operation_id="deployments_workbooks_list",
        parameters=[
            OpenApiParameter(
                "folderId",
                {"oneOf": [_ID_FILTER, {"type": "string", "enum": ["null"]}]},
                description="Workbooks of this folder; `null` for those at the root; every workbook when left out",
            ),
            *PAGE_PARAMETERS,
        ],
        responses={
            200: page_of("WorkbookPage", WORKBOOK, data=True, count=True),
            400: INVALID,
            404: DEPLOYMENT_NOT_FOUND,
        },
    )
    def get(self, request: PlatformRequest, deployment_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        params = request.query_params
        in_root = params.get("folderId") == "null"
        folder_id = None if in_root else _id_param(params, "folderId")
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
        data = _validated(WorkbookCreateSerializer, request)
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
        data = _validated(WorkbookUpdateSerializer, request)
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
        data = _validated(WorkbookCreateSerializer, request)
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
        data = _validated(WorkbookDashboardSerializer, request)
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
        data = _validated(PublishSerializer, request)
        if "workbookId" in data and data["workbookId"] != workbook.pk:
            raise BadRequest(f"workbookId {data['workbookId']} does not match the workbook of the path ({workbook.pk})")
        dashboard = dashboards.workbook_publish(
            workbook=workbook,
            title=data.get("title"),
            description=data.get("description"),
            allow_embed=data.get("allowEmbed"),
            published_by=request.user.token.name,
        )
        return Response(_dashboard_answer(dashboard))


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
        data = _validated(EmbedAccessSerializer, request)
        state = dashboards.embed_access_update(
            workbook=workbook,
            embed_tenant_name=data.get("embedTenantName"),
            all_embed_users=data.get("allEmbedUsers", False),
            action=data.get("action"),
            allow_embed=data.get("allowEmbed"),
        )
        return Response(embed_access_item(state))


# --- reports -----------------------------------------------------------------------------------------


class ReportSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """``CreateReportInput`` / ``UpdateReportInput``: every field optional (the views say what a create needs)."""

    name = StrictCharField(required=False, max_length=255)
    title = StrictCharField(required=False, allow_blank=True, allow_null=True, max_length=255)
    description = StrictCharField(required=False, allow_blank=True, allow_null=True)
    jsonQuery = JsonValueField(required=False, allow_null=True)
    sqlQuery = StrictCharField(required=False, allow_blank=True, allow_null=True)
    pivotItems = JsonValueField(required=False, allow_null=True)
    meta = JsonObjectField(required=False, allow_null=True)
    publicId = StrictCharField(required=False, allow_null=True)
    workbookId = StrictIntegerField(required=False, allow_null=True)
    folderId = StrictIntegerField(required=False, allow_null=True)
    source = serializers.ChoiceField(choices=Report.Source.values, required=False)  # type: ignore[assignment]


_REPORT_RENAMES = {
    "jsonQuery": "json_query",
    "sqlQuery": "sql_query",
    "pivotItems": "pivot_items",
    "publicId": "public_id",
}


def _report_fields(deployment: Deployment, data: Mapping[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for key, value in data.items():
        if key == "workbookId":
            fields["workbook"] = _workbook(deployment, value)
        elif key == "folderId":
            fields["folder"] = _folder(deployment, value)
        else:
            fields[_REPORT_RENAMES.get(key, key)] = value
    return fields


class ReportListView(PlatformView):
    audit_resource = "report"

    @extend_schema(
        operation_id="deployments_reports_list",
        parameters=[
            OpenApiParameter("workbookId", _ID_FILTER, description="Reports of this workbook"),
            OpenApiParameter("folderId", _ID_FILTER, description="Reports of this folder"),
            OpenApiParameter("search", str, description="Reports whose name or title contains this text"),
            *PAGE_PARAMETERS,
        ],
        responses={200: page_of("ReportPage", REPORT, data=True, count=True), 400: INVALID, 404: DEPLOYMENT_NOT_FOUND},
    )
    def get(self, request: PlatformRequest, deployment_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        params = request.query_params
        search = params.get("search")
        if search is not None and "\x00" in search:
            raise BadRequest("search must not contain NUL characters")
        rows = selectors.reports_of(
            deployment=deployment,
            workbook_id=_id_param(params, "workbookId"),
            folder_id=_id_param(params, "folderId"),
            search=search,
        )
        return Response(_list_answer(rows, params, report_item))

    @extend_schema(
        request=ReportSerializer,
        responses={
            201: REPORT,
            400: error("Invalid input (name is required), or workbookId/folderId is not of the deployment"),
            404: DEPLOYMENT_NOT_FOUND,
            409: error("A report with this publicId already exists in the account"),
        },
    )
    def post(self, request: PlatformRequest, deployment_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        data = _validated(ReportSerializer, request)
        if "name" not in data:
            raise BadRequest("name: This field is required.")
        report = dashboards.report_create(deployment=deployment, fields=_report_fields(deployment, data))
        return Response(report_item(report), status=201)


class ReportDetailView(PlatformView):
    audit_resource = "report"

    @extend_schema(responses={200: REPORT, 404: REPORT_NOT_FOUND})
    def get(self, request: PlatformRequest, deployment_id: int, report_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        return Response(report_item(selectors.report_of(deployment=deployment, report_id=report_id)))

    @extend_schema(
        request=ReportSerializer,
        responses={
            200: REPORT,
            400: error("Invalid input, or workbookId/folderId is not of the deployment"),
            404: REPORT_NOT_FOUND,
            409: error("A report with this publicId already exists in the account"),
        },
    )
    def put(self, request: PlatformRequest, deployment_id: int, report_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        report = selectors.report_of(deployment=deployment, report_id=report_id)
        data = _validated(ReportSerializer, request)
        report = dashboards.report_update(report=report, fields=_report_fields(deployment, data))
        return Response(report_item(report))

    @extend_schema(responses={204: None, 404: REPORT_NOT_FOUND})
    def delete(self, request: PlatformRequest, deployment_id: int, report_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        dashboards.report_delete(report=selectors.report_of(deployment=deployment, report_id=report_id))
        return Response(status=204)


class ReportByPublicIdView(PlatformView):
    audit_resource = "report"
    audit_verbs = {"PUT": "upsert"}
    audit_id_from_answer = True  # addressed by publicId, named by id

    @extend_schema(
        request=ReportSerializer,
        responses={
            200: OpenApiResponse(REPORT, description="The report with this publicId, created or updated"),
            400: error(
                "Invalid input, a body publicId that is not the path's, or workbookId/folderId not of the deployment"
            ),
            404: DEPLOYMENT_NOT_FOUND,
            409: error("The publicId belongs to a report of another deployment"),
        },
    )
    def put(self, request: PlatformRequest, deployment_id: int, public_id: str) -> Response:
        deployment = self.deployment(request, deployment_id)
        data = _validated(ReportSerializer, request)
        if data.get("publicId") is not None and data["publicId"] != public_id:
            raise BadRequest("publicId in the body does not match the path")
        data.pop("publicId", None)
        report = dashboards.report_upsert_by_public_id(
            deployment=deployment, public_id=public_id, fields=_report_fields(deployment, data)
        )
        return Response(report_item(report))


# --- folders -----------------------------------------------------------------------------------------


class FolderCreateSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    name = StrictCharField(max_length=255)
    parentId = StrictIntegerField(required=False, allow_null=True)
    position = StrictIntegerField(required=False, min_value=-(2**31), max_value=2**31 - 1)


class FolderUpdateSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    name = StrictCharField(required=False, max_length=255)
    position = StrictIntegerField(required=False, min_value=-(2**31), max_value=2**31 - 1)


class FolderListView(PlatformView):
    audit_resource = "folder"

    @extend_schema(
        operation_id="deployments_folders_list",
        parameters=[
            OpenApiParameter(
                "parentId", _ID_FILTER, description="Sub-folders of this folder; root folders if left out"
            ),
            *PAGE_PARAMETERS,
        ],
        responses={
            200: page_of("FolderPage", FOLDER, data=True, count=True),
            400: error("Invalid parameter, or parentId is not a folder of the deployment"),
            404: DEPLOYMENT_NOT_FOUND,
        },
    )
    def get(self, request: PlatformRequest, deployment_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        parent_id = _id_param(request.query_params, "parentId")
        if parent_id is not None:
            _folder(deployment, parent_id, "parentId")
        rows = selectors.folders_of(deployment=deployment, parent_id=parent_id)
        return Response(_list_answer(rows, request.query_params, folder_item))

    @extend_schema(
        request=FolderCreateSerializer,
        responses={
            201: FOLDER,
            400: error("Invalid input, parentId is not a folder of the deployment, or folders nest too deep"),
            404: DEPLOYMENT_NOT_FOUND,
        },
    )
    def post(self, request: PlatformRequest, deployment_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        data = _validated(FolderCreateSerializer, request)
        folder = dashboards.folder_create(
            deployment=deployment,
            name=data["name"],
            parent=_folder(deployment, data.get("parentId"), "parentId"),
            position=data.get("position", 0),
        )
        return Response(folder_item(folder), status=201)


class FolderDetailView(PlatformView):
    audit_resource = "folder"

    @extend_schema(responses={200: FOLDER, 404: FOLDER_NOT_FOUND})
    def get(self, request: PlatformRequest, deployment_id: int, folder_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        return Response(folder_item(selectors.folder_of(deployment=deployment, folder_id=folder_id)))

    @extend_schema(request=FolderUpdateSerializer, responses={200: FOLDER, 400: INVALID, 404: FOLDER_NOT_FOUND})
    def put(self, request: PlatformRequest, deployment_id: int, folder_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        folder = selectors.folder_of(deployment=deployment, folder_id=folder_id)
        data = _validated(FolderUpdateSerializer, request)
        return Response(folder_item(dashboards.folder_update(folder=folder, changes=data)))

    @extend_schema(responses={204: None, 400: error("The folder has sub-folders"), 404: FOLDER_NOT_FOUND})
    def delete(self, request: PlatformRequest, deployment_id: int, folder_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        dashboards.folder_delete(folder=selectors.folder_of(deployment=deployment, folder_id=folder_id))
        return Response(status=204)


class FolderAncestorsView(PlatformView):
    @extend_schema(
        responses={
            200: OpenApiResponse(list_of(FOLDER), description="Root first"),
            404: FOLDER_NOT_FOUND,
        }
    )
    def get(self, request: PlatformRequest, deployment_id: int, folder_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        folder = selectors.folder_of(deployment=deployment, folder_id=folder_id)
        return Response([folder_item(f) for f in selectors.folder_ancestors(folder=folder)])


# --- /api/v1/embed/dashboard/{publicId} --------------------------------------------------------------


class EmbedDashboardSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    allowEmbed = StrictBooleanField()


class EmbedDashboardView(PlatformView):
    """``GET`` the account's dashboard by publicId; ``PATCH {allowEmbed}`` turns signed embedding on or off."""

    audit_resource = "embed_dashboard"
    audit_verbs = {"PATCH": "update"}

    def _dashboard(self, request: PlatformRequest, public_id: str) -> Dashboard:
        dashboard = selectors.dashboard_by_public_id(public_id=public_id, account=request.user.account)
        if dashboard is None:
            raise NotFound(f"Dashboard {public_id} not found")
        return dashboard

    @extend_schema(responses={200: DASHBOARD, 404: error("No dashboard with this publicId in the caller's account")})
    def get(self, request: PlatformRequest, public_id: str) -> Response:
        return Response(_dashboard_answer(self._dashboard(request, public_id)))

    @extend_schema(
        request=whole(EmbedDashboardSerializer),
        responses={
            200: EMBED_DASHBOARD_STATE,
            400: INVALID,
            404: error("No dashboard with this publicId in the caller's account"),
        },
    )
    def patch(self, request: PlatformRequest, public_id: str) -> Response:
        dashboard = self._dashboard(request, public_id)
        data = _validated(EmbedDashboardSerializer, request)
        dashboard = dashboards.dashboard_allow_embed_set(dashboard=dashboard, allow_embed=data["allowEmbed"])
        return Response({"publicId": dashboard.public_id, "allowEmbed": dashboard.allow_embed})
