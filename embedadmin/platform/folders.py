"""Platform API v1, a deployment's folders (reference 2.3): ``GET|POST /api/v1/deployments/{id}/folders``,
``GET|PUT|DELETE .../folders/{folderId}`` and ``GET .../folders/{folderId}/ancestors``; and :func:`named_folder`,
the folder a body names, which workbooks and reports read too.

Thin adapters over ``embedadmin.dashboards``, as :mod:`embedadmin.platform.platform_view` describes.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from embedadmin.accounts.authentication import PlatformRequest
from embedadmin.accounts.models import Deployment
from embedadmin.core.edge.times import iso_time
from embedadmin.core.fields import RejectUnknownFieldsMixin, StrictCharField, StrictIntegerField
from embedadmin.dashboards import selectors
from embedadmin.dashboards import services as dashboards
from embedadmin.dashboards.models import Folder
from embedadmin.platform.openapi import INVALID, error, list_of, page_of, page_operation
from embedadmin.platform.platform_view import (
    DEPLOYMENT_NOT_FOUND,
    ID_FILTER,
    PlatformView,
    id_param,
    list_answer,
    named_row,
    validated_body,
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
FOLDER_NOT_FOUND = error("No folder with this id in the deployment (or the deployment is not the caller's)")


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


def named_folder(deployment: Deployment, folder_id: int | None, field: str = "folderId") -> Folder | None:
    def lookup(row_id: int) -> Folder:
        return selectors.folder_of(deployment=deployment, folder_id=row_id)

    return named_row(lookup, folder_id, field=field, noun="folder")


class FolderCreateSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    name = StrictCharField(max_length=255)
    parentId = StrictIntegerField(required=False, allow_null=True)
    position = StrictIntegerField(required=False, min_value=-(2**31), max_value=2**31 - 1)


class FolderUpdateSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    name = StrictCharField(required=False, max_length=255)
    position = StrictIntegerField(required=False, min_value=-(2**31), max_value=2**31 - 1)


class FolderListView(PlatformView):
    audit_resource = "folder"

    @page_operation(
        page_of("FolderPage", FOLDER, data=True, count=True),
        operation_id="deployments_folders_list",
        filters=[
            OpenApiParameter("parentId", ID_FILTER, description="Sub-folders of this folder; root folders if left out")
        ],
        errors={
            400: error("Invalid parameter, or parentId is not a folder of the deployment"),
            404: DEPLOYMENT_NOT_FOUND,
        },
    )
    def get(self, request: PlatformRequest, deployment_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        parent_id = id_param(request.query_params, "parentId")
        if parent_id is not None:
            named_folder(deployment, parent_id, "parentId")
        rows = selectors.folders_of(deployment=deployment, parent_id=parent_id)
        return Response(list_answer(rows, request.query_params, folder_item))

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
        data = validated_body(FolderCreateSerializer, request)
        folder = dashboards.folder_create(
            deployment=deployment,
            name=data["name"],
            parent=named_folder(deployment, data.get("parentId"), "parentId"),
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
        data = validated_body(FolderUpdateSerializer, request)
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
