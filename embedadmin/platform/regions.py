"""Platform API v1, regions: ``GET /api/v1/regions``, the one region this install is."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from embedadmin.accounts.authentication import PlatformRequest
from embedadmin.platform.openapi import page_of, page_operation
from embedadmin.platform.platform_view import IN_MEMORY_PAGE, PlatformView, page_of_list


class RegionListView(PlatformView):
    """``GET /api/v1/regions``: this install is one region, named by the ``PLATFORM_REGION`` setting
    (default ``local``)."""

    @page_operation(
        page_of(
            "RegionPage",
            inline_serializer(
                "Region",
                {
                    "id": serializers.CharField(),
                    "name": serializers.CharField(),
                    "title": serializers.CharField(),
                    "provider": serializers.CharField(),
                    "isPublic": serializers.BooleanField(),
                    "isDedicated": serializers.BooleanField(),
                    "isHybrid": serializers.BooleanField(),
                    "useAiEngineer": serializers.BooleanField(),
                },
            ),
            **IN_MEMORY_PAGE,
        ),
        operation_id="regions_list",
    )
    def get(self, request: PlatformRequest) -> Response:
        name = getattr(settings, "PLATFORM_REGION", "local")
        region = {
            "id": name,
            "name": name,
            "title": name,
            "provider": "self-hosted",
            "isPublic": False,
            "isDedicated": True,
            "isHybrid": False,
            "useAiEngineer": False,
        }
        return Response(page_of_list([region], params=request.query_params, key=lambda r: r["id"], serialize=dict))
