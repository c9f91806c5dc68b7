"""SCIM 2.0 Groups (RFC 7643/7644) over the tenant-wide group catalog.

This first cut covers what administrators need for generate-session: create a group by
``displayName``, list (with ``startIndex``/``count`` and a ``displayName eq`` filter), read and delete.
Errors carry the SCIM error schema plus our ``error`` key.

Deleting a group removes its internal (IdP-managed) members with it, as SCIM expects; a group that
external viewers still belong to (through generate-session ``groups``) is refused with 400 and left
as it was, the same policy as everywhere else groups are deleted.
"""

from __future__ import annotations

import re
from typing import Any, cast

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from embedadmin.accounts.authentication import IsPlatformCaller, PlatformRequest, PlatformTokenAuthentication
from embedadmin.core.errors import SCIM_MEDIA_TYPE, ApiError, BadRequest, scim_error_body
from embedadmin.core.parsers import JSONBodyParser, ScimJSONParser
from embedadmin.directory import selectors as directory_selectors
from embedadmin.directory import services as directory
from embedadmin.directory.models import Group

GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
FILTER_RE = re.compile(r'^\s*displayName\s+eq\s+"((?:[^"\\]|\\.)*)"\s*$', re.IGNORECASE)
MAX_COUNT = 500
NAME_MAX_LENGTH = cast(int, Group._meta.get_field("name").max_length)  # a CharField: never None


def scim_error(status: int, detail: str, scim_type: str | None = None, headers: dict | None = None) -> Response:
    return Response(
        scim_error_body(status, detail, scim_type), status=status, content_type=SCIM_MEDIA_TYPE, headers=headers
    )


def group_resource(group: Group, request: Request) -> dict[str, Any]:
    """The RFC 7643 Group resource of a tenant-wide group; members are its internal users."""
    location = request.build_absolute_uri(f"/api/scim/v2/Groups/{group.pk}")
    return {
        "schemas": [GROUP_SCHEMA],
        "id": str(group.pk),
        "displayName": group.name,
        "members": [
            {"value": str(u.pk), "display": u.username, "type": "User"}
            for u in directory_selectors.group_internal_members(group=group)
        ],
        "meta": {
            "resourceType": "Group",
            "created": group.created_at.isoformat(),
            "lastModified": group.updated_at.isoformat(),
            "location": location,
        },
    }


class ScimView(APIView):
    """Base of the SCIM endpoints: platform-token auth, and every error in the SCIM error shape."""

    authentication_classes = [PlatformTokenAuthentication]
    permission_classes = [IsPlatformCaller]
    parser_classes = [ScimJSONParser, JSONBodyParser]

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, ApiError):
            return scim_error(exc.status, exc.message, "uniqueness" if exc.status == 409 else None)
        response = super().handle_exception(exc)
        detail = response.data.get("error", "Request failed") if isinstance(response.data, dict) else "Request failed"
        headers = {k: response[k] for k in ("WWW-Authenticate", "Allow") if response.has_header(k)}
        return scim_error(response.status_code, detail, headers=headers)


def _query_int(raw: str | None, name: str, *, default: int, minimum: int) -> int:
    """A paging parameter; RFC 7644 section 3.4.2.4 reads values below the minimum as the minimum."""
    if raw is None or raw == "":
        return default
    try:
        return max(int(raw), minimum)
    except ValueError:
        raise BadRequest(f"{name} must be an integer") from None


class ScimGroupListView(ScimView):
    def get(self, request: PlatformRequest) -> Response:
        display_name = None
        raw_filter = request.query_params.get("filter")
        if raw_filter:
            match = FILTER_RE.match(raw_filter)
            if not match:
                return scim_error(400, "Only 'displayName eq \"...\"' filters are supported", "invalidFilter")
            display_name = match.group(1).replace('\\"', '"')
        params = request.query_params
        count = min(_query_int(params.get("count"), "count", default=100, minimum=0), MAX_COUNT)
        start = _query_int(params.get("startIndex"), "startIndex", default=1, minimum=1)
        page = directory_selectors.scim_groups(
            account=request.user.account, display_name=display_name, start_index=start, count=count
        )
        return Response(
            {
                "schemas": [LIST_SCHEMA],
                "totalResults": page.total,
                "startIndex": start,
                "itemsPerPage": len(page.groups),
                "Resources": [group_resource(g, request) for g in page.groups],
            },
            content_type=SCIM_MEDIA_TYPE,
        )

    def post(self, request: PlatformRequest) -> Response:
        data = request.data if isinstance(request.data, dict) else {}
        name = data.get("displayName")
        if not isinstance(name, str) or not name.strip():
            return scim_error(400, "displayName is required", "invalidValue")
        if len(name.strip()) > NAME_MAX_LENGTH or "\x00" in name:
            return scim_error(
                400, f"displayName must be at most {NAME_MAX_LENGTH} characters, without NUL", "invalidValue"
            )
        group = directory.group_create(account=request.user.account, embed_tenant=None, name=name)
        resource = group_resource(group, request)
        return Response(
            resource, status=201, content_type=SCIM_MEDIA_TYPE, headers={"Location": resource["meta"]["location"]}
        )


class ScimGroupDetailView(ScimView):
    def _group(self, request: PlatformRequest, group_id: str) -> Group:
        return directory_selectors.scim_group(account=request.user.account, group_id=group_id)

    def get(self, request: PlatformRequest, group_id: str) -> Response:
        return Response(group_resource(self._group(request, group_id), request), content_type=SCIM_MEDIA_TYPE)

    def delete(self, request: PlatformRequest, group_id: str) -> Response:
        directory.group_delete(group=self._group(request, group_id), with_internal_members=True)
        return Response(status=204)
