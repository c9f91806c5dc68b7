"""Platform API v1, published dashboards (reference 2.5): ``GET|PATCH /api/v1/embed/dashboard/{publicId}`` (a
``PATCH {allowEmbed}`` turns signed embedding on or off), and Cube's ``Dashboard`` shape, a workbook's published
face, which workbooks answer too (:mod:`embedadmin.platform.workbooks`).

Thin adapter: the view finds the dashboard in the caller's account (another account's is 404), checks the body
with its own serializer (unknown fields, wrong JSON types: 400), calls one service or selector of
``embedadmin.dashboards`` and shapes Cube's camelCase answer.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from embedadmin.accounts.authentication import PlatformRequest
from embedadmin.core.errors import NotFound
from embedadmin.core.fields import RejectUnknownFieldsMixin, StrictBooleanField
from embedadmin.dashboards import selectors
from embedadmin.dashboards import services as dashboards
from embedadmin.dashboards.models import Dashboard, ReportSnapshot
from embedadmin.dashboards.selectors import PublishedDashboard
from embedadmin.platform.openapi import INVALID, error, many, whole
from embedadmin.platform.platform_view import PlatformView, validated_body

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
EMBED_DASHBOARD_STATE = inline_serializer(
    "EmbedDashboardState", {"publicId": serializers.CharField(), "allowEmbed": serializers.BooleanField()}
)


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


def dashboard_answer(dashboard: Dashboard) -> dict[str, Any]:
    return dashboard_item(dashboard, selectors.published_of(dashboard=dashboard))


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
        return Response(dashboard_answer(self._dashboard(request, public_id)))

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
        data = validated_body(EmbedDashboardSerializer, request)
        dashboard = dashboards.dashboard_allow_embed_set(dashboard=dashboard, allow_embed=data["allowEmbed"])
        return Response({"publicId": dashboard.public_id, "allowEmbed": dashboard.allow_embed})
