"""SCIM 2.0 Groups (RFC 7643/7644) over the tenant-wide group catalog.

This first cut covers what administrators need for generate-session: create a group by
``displayName``, list (with ``startIndex``/``count`` and a ``displayName eq`` filter), read and delete.
Errors carry the SCIM error schema plus our ``error`` key.
"""

from __future__ import annotations

import re
from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from embedadmin.accounts.authentication import IsPlatformCaller, PlatformTokenAuthentication
from embedadmin.core.errors import ApiError, BadRequest, NotFound
from embedadmin.directory import services as directory
from embedadmin.directory.models import Group

GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error"
FILTER_RE = re.compile(r'^\s*displayName\s+eq\s+"((?:[^"\\]|\\.)*)"\s*$', re.IGNORECASE)


def scim_error(status: int, detail: str, scim_type: str | None = None) -> Response:
    body: dict[str, Any] = {"schemas": [ERROR_SCHEMA], "status": str(status), "detail": detail, "error": detail}
    if scim_type:
        body["scimType"] = scim_type
    return Response(body, status=status, content_type="application/scim+json")


def group_resource(group: Group, request: Request) -> dict[str, Any]:
    location = request.build_absolute_uri(f"/api/scim/v2/Groups/{group.pk}")
    return {
        "schemas": [GROUP_SCHEMA],
        "id": str(group.pk),
        "displayName": group.name,
        "members": [{"value": str(u.pk), "display": u.username, "type": "User"} for u in group.internal_members.all()],
        "meta": {
            "resourceType": "Group",
            "created": group.created_at.isoformat(),
            "lastModified": group.updated_at.isoformat(),
            "location": location,
        },
    }


class ScimView(APIView):
    authentication_classes = [PlatformTokenAuthentication]
    permission_classes = [IsPlatformCaller]

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, ApiError):
            return scim_error(exc.status, exc.message, "uniqueness" if exc.status == 409 else None)
        response = super().handle_exception(exc)
        detail = response.data.get("error", "Request failed") if isinstance(response.data, dict) else "Request failed"
        return scim_error(response.status_code, detail)


def _positive_int(raw: str | None, name: str, default: int) -> int:
    if raw is None or raw == "":
        return default
    try:
        return max(int(raw), 0 if name == "count" else 1)
    except ValueError:
        raise BadRequest(f"{name} must be an integer") from None


class ScimGroupListView(ScimView):
    def get(self, request: Request) -> Response:
        groups = Group.objects.filter(account=request.user.account, embed_tenant__isnull=True).prefetch_related(
            "internal_members"
        )
        raw_filter = request.query_params.get("filter")
        if raw_filter:
            match = FILTER_RE.match(raw_filter)
            if not match:
                return scim_error(400, "Only 'displayName eq \"...\"' filters are supported", "invalidFilter")
            groups = groups.filter(name=match.group(1).replace('\\"', '"'))
        start = _positive_int(request.query_params.get("startIndex"), "startIndex", 1)
        count = min(_positive_int(request.query_params.get("count"), "count", 100), 500)
        total = groups.count()
        page = list(groups.order_by("id")[start - 1 : start - 1 + count])
        return Response(
            {
                "schemas": [LIST_SCHEMA],
                "totalResults": total,
                "startIndex": start,
                "itemsPerPage": len(page),
                "Resources": [group_resource(g, request) for g in page],
            },
            content_type="application/scim+json",
        )

    def post(self, request: Request) -> Response:
        data = request.data if isinstance(request.data, dict) else {}
        name = data.get("displayName")
        if not isinstance(name, str) or not name.strip():
            return scim_error(400, "displayName is required", "invalidValue")
        group = directory.group_create(account=request.user.account, embed_tenant=None, name=name)
        return Response(group_resource(group, request), status=201, content_type="application/scim+json")


class ScimGroupDetailView(ScimView):
    def _group(self, request: Request, group_id: str) -> Group:
        group = (
            Group.objects.filter(account=request.user.account, embed_tenant__isnull=True, pk=group_id).first()
            if group_id.isdigit()
            else None
        )
        if group is None:
            raise NotFound(f"Group {group_id} not found")
        return group

    def get(self, request: Request, group_id: str) -> Response:
        return Response(group_resource(self._group(request, group_id), request), content_type="application/scim+json")

    def delete(self, request: Request, group_id: str) -> Response:
        group = self._group(request, group_id)
        group.internal_members.clear()  # SCIM deletes a group with its memberships; users stay
        directory.group_delete(group=group)
        return Response(status=204)
