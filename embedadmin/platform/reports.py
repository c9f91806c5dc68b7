"""Platform API v1, a deployment's reports (reference 2.2): ``GET|POST /api/v1/deployments/{id}/reports``,
``GET|PUT|DELETE .../reports/{reportId}`` and ``PUT .../reports/by-public-id/{publicId}`` (an upsert).

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
    JsonValueField,
    RejectUnknownFieldsMixin,
    StrictCharField,
    StrictIntegerField,
)
from embedadmin.dashboards import selectors
from embedadmin.dashboards import services as dashboards
from embedadmin.dashboards.models import Report, Workbook
from embedadmin.platform.folders import named_folder
from embedadmin.platform.openapi import error, page_of, page_operation
from embedadmin.platform.platform_view import (
    DEPLOYMENT_NOT_FOUND,
    ID_FILTER,
    PlatformView,
    id_param,
    list_answer,
    named_row,
    validated_body,
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
REPORT_NOT_FOUND = error("No report with this id in the deployment (or the deployment is not the caller's)")


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


def _workbook(deployment: Deployment, workbook_id: int | None) -> Workbook | None:
    def lookup(row_id: int) -> Workbook:
        return selectors.workbook_of(deployment=deployment, workbook_id=row_id)

    return named_row(lookup, workbook_id, field="workbookId", noun="workbook")


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
            fields["folder"] = named_folder(deployment, value)
        else:
            fields[_REPORT_RENAMES.get(key, key)] = value
    return fields


class ReportListView(PlatformView):
    audit_resource = "report"

    @page_operation(
        page_of("ReportPage", REPORT, data=True, count=True),
        operation_id="deployments_reports_list",
        filters=[
            OpenApiParameter("workbookId", ID_FILTER, description="Reports of this workbook"),
            OpenApiParameter("folderId", ID_FILTER, description="Reports of this folder"),
            OpenApiParameter("search", str, description="Reports whose name or title contains this text"),
        ],
        errors={404: DEPLOYMENT_NOT_FOUND},
    )
    def get(self, request: PlatformRequest, deployment_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        params = request.query_params
        search = params.get("search")
        if search is not None and "\x00" in search:
            raise BadRequest("search must not contain NUL characters")
        rows = selectors.reports_of(
            deployment=deployment,
            workbook_id=id_param(params, "workbookId"),
            folder_id=id_param(params, "folderId"),
            search=search,
        )
        return Response(list_answer(rows, params, report_item))

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
        data = validated_body(ReportSerializer, request)
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
        data = validated_body(ReportSerializer, request)
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
        data = validated_body(ReportSerializer, request)
        if data.get("publicId") is not None and data["publicId"] != public_id:
            raise BadRequest("publicId in the body does not match the path")
        data.pop("publicId", None)
        report = dashboards.report_upsert_by_public_id(
            deployment=deployment, public_id=public_id, fields=_report_fields(deployment, data)
        )
        return Response(report_item(report))
