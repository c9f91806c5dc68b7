"""SCIM 2.0 endpoints at ``/api/scim/v2`` and ``/scim/v2``: Users, Groups and the discovery endpoints.

Bodies are read and written with ``scim2-models`` (validation by mutability and requiredness, PATCH application,
``attributes``/``excludedAttributes``) under the tolerant policy of ``resources.POLICY``; every error is a SCIM
Error with its ``scimType``. A PATCH is applied to the stored resource and written back as a whole, in one
transaction: all its operations or none.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from django.db import transaction
from django.db.models import Q
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from pydantic import ValidationError
from rest_framework import exceptions as drf_exceptions
from rest_framework.request import Request
from rest_framework.response import Response
from scim2_models import (
    Context,
    Error,
    PatchOp,
    ResourceType,
    ResponseParameters,
    Schema,
    SCIMException,
    SearchRequest,
)
from scim2_models import Group as ScimGroup

from embedadmin.accounts import selectors as accounts_selectors
from embedadmin.accounts.authentication import IsPlatformCaller, PlatformRequest, PlatformTokenAuthentication
from embedadmin.accounts.models import Account, InternalUserProfile
from embedadmin.accounts.services import internal_user_profile
from embedadmin.audit.audited_views import AuditedView
from embedadmin.core.edge.bodies import NOT_AN_OBJECT
from embedadmin.core.edge.ids import row_id
from embedadmin.core.error_shapes import SCIM_MEDIA_TYPE, scim_error_body
from embedadmin.core.errors import ApiError
from embedadmin.core.parsers import JSONBodyParser, ScimJSONParser
from embedadmin.directory import selectors as directory_selectors
from embedadmin.directory import services as directory
from embedadmin.directory.models import Group
from embedadmin.embedding import internal_users as user_lifecycle
from embedadmin.platform.openapi import error
from embedadmin.platform.scim import resources
from embedadmin.platform.scim.filters import GROUP_COLUMNS, USER_COLUMNS, filter_query

# --- the OpenAPI description (RFC 7643 resources; the account's User schema has extensions of its own) ----------

_STRINGS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
_META = {
    "type": "object",
    "properties": {
        "resourceType": {"type": "string"},
        "created": {"type": "string"},
        "lastModified": {"type": "string"},
        "location": {"type": "string"},
        "version": {"type": "string"},
    },
}
# SCIM's multi-valued attributes also carry a "$ref" (the member's URI). It is not listed as a property: OpenAPI
# tools read any "$ref" key as a reference to resolve (Swagger UI stopped rendering at the first one).
_MULTI_VALUED = {
    "type": "array",
    "items": {
        "type": "object",
        "description": 'value, display, type, primary, and "$ref": the URI of the resource named by value',
        "properties": {
            "value": {"type": "string"},
            "display": {"type": "string"},
            "type": {"type": "string"},
            "primary": {"type": "boolean"},
        },
    },
}
_USER_ATTRIBUTES = {
    "schemas": _STRINGS,
    "externalId": {"type": "string"},
    "userName": {"type": "string"},
    "name": {"type": "object", "properties": {"givenName": {"type": "string"}, "familyName": {"type": "string"}}},
    "displayName": {"type": "string"},
    "active": {"type": "boolean"},
    "emails": _MULTI_VALUED,
    resources.USER_ATTRIBUTE_URN: {"type": "object", "description": "The user's attribute values, by name"},
}
SCIM_USER = {
    "type": "object",
    "description": "An RFC 7643 User with the account's extensions (GET /Schemas); `attributes` and "
    "`excludedAttributes` choose the attributes returned.",
    "properties": {**_USER_ATTRIBUTES, "id": {"type": "string"}, "groups": _MULTI_VALUED, "meta": _META},
    "required": ["schemas", "id"],
}
SCIM_USER_INPUT = {
    "type": "object",
    "description": "An RFC 7643 User: userName is required; id, groups and meta are read-only.",
    "properties": _USER_ATTRIBUTES,
    "required": ["userName"],
}
SCIM_GROUP = {
    "type": "object",
    "description": "An RFC 7643 Group of internal users",
    "properties": {
        "schemas": _STRINGS,
        "id": {"type": "string"},
        "externalId": {"type": "string"},
        "displayName": {"type": "string"},
        "members": _MULTI_VALUED,
        "meta": _META,
    },
    "required": ["schemas", "id"],
}
SCIM_GROUP_INPUT = {
    "type": "object",
    "description": "An RFC 7643 Group: displayName is required; members are internal users (value: their id).",
    "properties": {
        "schemas": _STRINGS,
        "externalId": {"type": "string"},
        "displayName": {"type": "string", "maxLength": 255},
        "members": _MULTI_VALUED,
    },
    "required": ["displayName"],
}
SCIM_PATCH = {
    "type": "object",
    "description": "An RFC 7644 3.5.2 PatchOp: all its operations or none",
    "properties": {
        "schemas": _STRINGS,
        "Operations": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "op": {"type": "string", "description": "add, remove or replace"},
                    "path": {"type": "string"},
                    "value": {},
                },
                "required": ["op"],
            },
        },
    },
    "required": ["Operations"],
}
SCIM_SEARCH = {
    "type": "object",
    "description": "An RFC 7644 3.4.3 SearchRequest",
    "properties": {
        "schemas": _STRINGS,
        "filter": {"type": "string"},
        "startIndex": {"type": "integer"},
        "count": {"type": "integer"},
        "attributes": _STRINGS,
        "excludedAttributes": _STRINGS,
        "sortBy": {"type": "string"},
        "sortOrder": {"type": "string"},
    },
}
SCIM_RESOURCE = {
    "type": "object",
    "properties": {"schemas": _STRINGS, "id": {"type": "string"}, "meta": _META},
    "required": ["schemas"],
}


def _scim_list(item: dict[str, Any]) -> dict[str, Any]:
    """An RFC 7644 3.4.2 ListResponse of ``item``."""
    return {
        "type": "object",
        "properties": {
            "schemas": _STRINGS,
            "totalResults": {"type": "integer"},
            "startIndex": {"type": "integer"},
            "itemsPerPage": {"type": "integer"},
            "Resources": {"type": "array", "items": item},
        },
        "required": ["schemas", "totalResults", "startIndex", "itemsPerPage", "Resources"],
    }


def _ok(schema: dict[str, Any], status: int = 200, description: str = "") -> dict[Any, Any]:
    """A success answer in ``application/scim+json``, the media type every SCIM answer has."""
    return {(status, SCIM_MEDIA_TYPE): OpenApiResponse(schema, description=description)}


def _body(schema: dict[str, Any]) -> dict[str, Any]:
    """A request body in either media type the SCIM endpoints read (``ScimJSONParser``, ``JSONBodyParser``)."""
    return {SCIM_MEDIA_TYPE: schema, "application/json": schema}


_RETURNED = [
    OpenApiParameter("attributes", str, description="The attributes to return, comma-separated"),
    OpenApiParameter("excludedAttributes", str, description="Attributes not to return, comma-separated"),
]
_LIST_PARAMETERS = [
    OpenApiParameter("filter", str, description="An RFC 7644 3.4.2.2 filter (docs/scim.md: the supported ones)"),
    OpenApiParameter("startIndex", int, description="1-based index of the first result (default 1)"),
    OpenApiParameter("count", int, description=f"Results per page (default 100, at most {resources.MAX_RESULTS})"),
    *_RETURNED,
]
_INVALID = error("invalidSyntax, invalidValue, invalidFilter...: the scimType says which")
_USER_NOT_FOUND = error("No internal user with this id in the caller's account")
_GROUP_NOT_FOUND = error("No tenant-wide group with this id in the caller's account")
_USER_TAKEN = error("uniqueness: a user with this userName exists")
_GROUP_TAKEN = error("uniqueness: a group with this displayName exists")

_SCIM_TYPE_OF_STATUS = {409: "uniqueness"}
GROUP_NAME_MAX_LENGTH = 255  # directory.Group.name


def scim_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(data, status=status, content_type=SCIM_MEDIA_TYPE, headers=headers)


def scim_error(status: int, detail: str, scim_type: str | None = None, headers: dict | None = None) -> Response:
    """An RFC 7644 3.12 Error: ``schemas``, ``status``, ``scimType`` and ``detail``, nothing else (a strict client's
    Error model refuses any other member; :mod:`embedadmin.core.error_shapes`)."""
    return scim_response(scim_error_body(status, detail, scim_type), status=status, headers=headers)


def _validation_error(exc: ValidationError) -> Response:
    errors = Error.from_validation_errors(exc)
    first = errors[0] if errors else Error(status=400, detail=str(exc))
    status = int(first.status or 400)
    return scim_error(status, first.detail or "Invalid request", first.scim_type or "invalidValue")


# What SCIM's methods do to a resource (RFC 7644 3.3-3.6), as the audit log names it.
SCIM_VERBS: Mapping[str, str] = {"POST": "create", "PUT": "replace", "PATCH": "update", "DELETE": "delete"}


class ScimView(AuditedView):
    """Base of the SCIM endpoints: platform-token auth, the account's service, and SCIM errors for everything."""

    audit_via = "scim"

    authentication_classes = [PlatformTokenAuthentication]
    permission_classes = [IsPlatformCaller]
    parser_classes = [ScimJSONParser, JSONBodyParser]

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, SCIMException):
            error = exc.to_error()
            return scim_error(int(error.status or 400), error.detail or "Invalid request", error.scim_type)
        if isinstance(exc, ValidationError):
            return _validation_error(exc)
        if isinstance(exc, ApiError):
            scim_type = _SCIM_TYPE_OF_STATUS.get(exc.status) or ("invalidValue" if exc.status == 400 else None)
            return scim_error(exc.status, exc.message, scim_type)
        response = super().handle_exception(exc)  # the product's handler: its messages, its status
        data = response.data
        detail = data.get("error") or data.get("detail") if isinstance(data, dict) else None
        headers = {k: response[k] for k in ("WWW-Authenticate", "Allow", "Retry-After") if response.has_header(k)}
        scim_type = "invalidSyntax" if isinstance(exc, drf_exceptions.ParseError) else None
        return scim_error(response.status_code, str(detail or "Request failed"), scim_type, headers=headers)

    def account(self) -> Account:
        request: PlatformRequest = self.request  # type: ignore[assignment]
        return request.user.account

    def base(self) -> str:
        """The absolute URL of the SCIM root the request came through (``/api/scim/v2`` or ``/scim/v2``)."""
        path = self.request.path
        root = path[: path.index("/v2/") + 3] if "/v2/" in path else path.rstrip("/")
        return self.request.build_absolute_uri(root)

    @functools.cached_property
    def service(self) -> resources.UserService:
        """The account's SCIM service, read once per request (a list dumps up to 500 users with its model)."""
        return resources.user_service_of(account=self.account())

    def body(self) -> dict[str, Any]:
        data = self.request.data
        if not isinstance(data, dict):
            raise SCIMExceptionSyntax(detail=NOT_AN_OBJECT)
        return dict(data)

    def response_parameters(self, source: dict[str, Any] | None = None) -> ResponseParameters[Any]:
        """``attributes`` and ``excludedAttributes`` of the query (or of a search body)."""
        params: dict[str, Any] = {}
        for key in ("attributes", "excludedAttributes"):
            raw = (source or {}).get(key) if source is not None else self.request.query_params.get(key)
            if raw:
                params[key] = raw if isinstance(raw, list) else [a.strip() for a in str(raw).split(",") if a.strip()]
        with resources.POLICY:
            return ResponseParameters.model_validate(params)


class SCIMExceptionSyntax(SCIMException):
    """A body that is not the JSON object an endpoint takes (400 ``invalidSyntax``)."""

    status = 400
    scim_type = "invalidSyntax"


def _paging(raw: dict[str, Any]) -> tuple[int, int]:
    """``startIndex`` (1-based; below 1 reads as 1) and ``count`` (negative reads as 0; at most MAX_RESULTS)."""

    def number(name: str, default: int) -> int:
        value = raw.get(name)
        if value is None or value == "":
            return default
        try:
            return int(value)
        except (TypeError, ValueError):
            raise SCIMExceptionValue(detail=f"{name} must be an integer") from None

    start = max(number("startIndex", 1), 1)
    count = min(max(number("count", 100), 0), resources.MAX_RESULTS)
    return start, count


def _list_response(resources_: list[dict[str, Any]], total: int, start: int) -> dict[str, Any]:
    return {
        "schemas": [resources.LIST_SCHEMA],
        "totalResults": total,
        "startIndex": start,
        "itemsPerPage": len(resources_),
        "Resources": resources_,
    }


# --- users --------------------------------------------------------------------------------------------------


class _UserMixin(ScimView):
    audit_resource = "scim_user"
    audit_verbs = SCIM_VERBS

    def user_payloads(self, users: list[Any]) -> list[dict[str, Any]]:
        account, base = self.account(), self.base()
        ids = [u.pk for u in users]
        groups = directory_selectors.internal_users_groups(account=account, user_ids=ids)
        values = directory_selectors.internal_users_attribute_values(account=account, user_ids=ids)
        payloads = []
        for user in users:
            profile = _profile_of(user)
            payloads.append(
                resources.user_payload(
                    user=user, profile=profile, groups=groups[user.pk], attribute_values=values[user.pk], base=base
                )
            )
        return payloads

    def user_dump(self, payload: dict[str, Any], params: ResponseParameters[Any] | None = None) -> dict[str, Any]:
        model = self.service.user_model
        with resources.POLICY:
            resource = model.model_validate(payload, scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
            return resource.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE, response_parameters=params)

    def list_users(self, query_source: dict[str, Any]) -> Response:
        service = self.service
        raw_filter = query_source.get("filter")
        query = Q()
        if raw_filter:
            with resources.POLICY:
                query = filter_query(str(raw_filter), model=service.user_model, columns=USER_COLUMNS)
        start, count = _paging(query_source)
        params = self.response_parameters(query_source if self.request.method == "POST" else None)
        page = accounts_selectors.internal_users_page(
            account=self.account(), query=query, start_index=start, count=count
        )
        dumped = [self.user_dump(p, params) for p in self.user_payloads(page.users)]
        return scim_response(_list_response(dumped, page.total, start))

    def write_user(self, *, user: Any, body: dict[str, Any], creating: bool, active_removed: bool = False) -> Any:
        model = self.service.user_model
        context = Context.RESOURCE_CREATION_REQUEST if creating else Context.RESOURCE_REPLACEMENT_REQUEST
        with resources.POLICY:
            resource = model.model_validate(resources.normalized_user_body(body), scim_ctx=context)
        write = resources.user_write(
            resource, keep_active=True if user is None else user.is_active, active_removed=active_removed
        )
        return user_lifecycle.internal_user_save(
            account=self.account(), user=user, changes=write.changes, attribute_values=write.attribute_values
        )


def _profile_of(user: Any) -> InternalUserProfile:
    try:
        profile: InternalUserProfile = user.scim_profile
    except InternalUserProfile.DoesNotExist:
        profile = internal_user_profile(user=user)
    return profile


class ScimUserListView(_UserMixin):
    @extend_schema(
        operation_id="Users_list",
        parameters=_LIST_PARAMETERS,
        responses={**_ok(_scim_list(SCIM_USER)), 400: _INVALID},
    )
    def get(self, request: PlatformRequest) -> Response:
        return self.list_users(dict(request.query_params.items()))

    @extend_schema(
        request=_body(SCIM_USER_INPUT),
        responses={**_ok(SCIM_USER, 201, "Created (Location: its URL)"), 400: _INVALID, 409: _USER_TAKEN},
    )
    def post(self, request: PlatformRequest) -> Response:
        user = self.write_user(user=None, body=self.body(), creating=True)
        payload = self.user_payloads([user])[0]
        return scim_response(self.user_dump(payload), status=201, headers={"Location": payload["meta"]["location"]})


class ScimUserSearchView(_UserMixin):
    audit_exempt = {"POST": "a search (RFC 7644 3.4.3): reads only"}
    audit_verbs: ClassVar[Mapping[str, str]] = {}

    @extend_schema(request=_body(SCIM_SEARCH), responses={**_ok(_scim_list(SCIM_USER)), 400: _INVALID})
    def post(self, request: PlatformRequest) -> Response:
        body = self.body()
        with resources.POLICY:
            SearchRequest.model_validate(body)  # the shape of a SearchRequest (RFC 7644 3.4.3)
        return self.list_users(body)


class ScimUserDetailView(_UserMixin):
    def _user(self, user_id: str) -> Any:
        return accounts_selectors.internal_user_of(account=self.account(), user_id=user_id)

    def _answer(self, user: Any) -> Response:
        user = self._user(str(user.pk))
        return scim_response(self.user_dump(self.user_payloads([user])[0], self.response_parameters()))

    @extend_schema(parameters=_RETURNED, responses={**_ok(SCIM_USER), 400: _INVALID, 404: _USER_NOT_FOUND})
    def get(self, request: PlatformRequest, user_id: str) -> Response:
        return self._answer(self._user(user_id))

    @extend_schema(
        request=_body(SCIM_USER_INPUT),
        parameters=_RETURNED,
        responses={**_ok(SCIM_USER), 400: _INVALID, 404: _USER_NOT_FOUND, 409: _USER_TAKEN},
    )
    def put(self, request: PlatformRequest, user_id: str) -> Response:
        with transaction.atomic():
            user = self.write_user(user=self._user(user_id), body=self.body(), creating=False)
        return self._answer(user)

    @extend_schema(
        request=_body(SCIM_PATCH),
        parameters=_RETURNED,
        responses={**_ok(SCIM_USER), 400: _INVALID, 404: _USER_NOT_FOUND, 409: _USER_TAKEN},
    )
    def patch(self, request: PlatformRequest, user_id: str) -> Response:
        service = self.service
        body = self.body()
        with transaction.atomic(), resources.POLICY:
            user = self._user(user_id)
            current = service.user_model.model_validate(self.user_payloads([user])[0], scim_ctx=None)
            patch_model: Any = PatchOp.__class_getitem__(service.user_model)  # the account's model is built at run time
            normalized = _normalized_patch(body)
            self.audit_note(operations=_operation_names(normalized))
            operation = patch_model.model_validate(normalized, scim_ctx=Context.RESOURCE_PATCH_REQUEST)
            operation.patch(current)
            patched = current.model_dump(scim_ctx=Context.DEFAULT)
            for key in ("id", "meta", "groups"):
                patched.pop(key, None)
            self.write_user(user=user, body=patched, creating=False, active_removed="active" not in patched)
        return self._answer(user)

    @extend_schema(responses={204: None, 404: _USER_NOT_FOUND})
    def delete(self, request: PlatformRequest, user_id: str) -> Response:
        user_lifecycle.internal_user_remove(user=self._user(user_id))
        return Response(status=204)


def _normalized_patch(body: dict[str, Any]) -> dict[str, Any]:
    """A PatchOp as Okta and Entra send it, made readable: ``Operations`` under any case, a path or value key
    ``urn:cube:params:1.0:UserAttribute:<name>`` as its extension's, string booleans are read by the models."""
    operations = next((v for k, v in body.items() if k.casefold() == "operations"), None)
    if not isinstance(operations, list):
        return body
    fixed = []
    for operation in operations:
        if isinstance(operation, dict) and isinstance(operation.get("value"), dict):
            operation = {**operation, "value": resources.normalized_user_body(operation["value"])}
            operation["value"].pop("schemas", None)
        fixed.append(operation)
    return {**{k: v for k, v in body.items() if k.casefold() != "operations"}, "Operations": fixed}


def _operation_names(body: dict[str, Any]) -> list[str]:
    """What a PatchOp does, for the audit log: each operation's op and path, or without a path the names its
    value sets (``replace active``), never a value."""
    names: list[str] = []
    operations = body.get("Operations")
    for operation in operations if isinstance(operations, list) else []:
        if not isinstance(operation, dict):
            continue
        op = str(operation.get("op", "")).lower()[:10]
        path, value = operation.get("path"), operation.get("value")
        if isinstance(path, str) and path:
            names.append(f"{op} {path[:100]}")
        elif isinstance(value, dict):
            names.extend(f"{op} {str(name)[:100]}" for name in list(value)[:20])
        else:
            names.append(op)
    return names[:50]


# --- groups -------------------------------------------------------------------------------------------------


class _GroupMixin(ScimView):
    audit_resource = "scim_group"
    audit_verbs = SCIM_VERBS

    def group_payload(self, group: Group) -> dict[str, Any]:
        return resources.group_payload(
            group=group, members=directory_selectors.group_internal_members(group=group), base=self.base()
        )

    def group_dump(self, payload: dict[str, Any], params: ResponseParameters[Any] | None = None) -> dict[str, Any]:
        with resources.POLICY:
            resource = ScimGroup.model_validate(payload, scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
            return resource.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE, response_parameters=params)

    def list_groups(self, query_source: dict[str, Any]) -> Response:
        raw_filter = query_source.get("filter")
        query = Q()
        if raw_filter:
            with resources.POLICY:
                query = filter_query(str(raw_filter), model=ScimGroup, columns=GROUP_COLUMNS)
        start, count = _paging(query_source)
        params = self.response_parameters(query_source if self.request.method == "POST" else None)
        page = directory_selectors.scim_groups_matching(
            account=self.account(), query=query, start_index=start, count=count
        )
        dumped = [self.group_dump(self.group_payload(g), params) for g in page.groups]
        return scim_response(_list_response(dumped, page.total, start))

    def write_group(self, *, group: Group | None, body: dict[str, Any], creating: bool) -> Group:
        context = Context.RESOURCE_CREATION_REQUEST if creating else Context.RESOURCE_REPLACEMENT_REQUEST
        with resources.POLICY:
            resource = ScimGroup.model_validate(body, scim_ctx=context)
        name = str(resource.display_name or "")
        if len(name.strip()) > GROUP_NAME_MAX_LENGTH or "\x00" in name:
            raise SCIMExceptionValue(
                detail=f"displayName must be at most {GROUP_NAME_MAX_LENGTH} characters, without NUL"
            )
        member_ids = []
        displays: dict[int, str] = {}
        for member in resource.members or []:
            if member.type not in (None, "User"):
                raise SCIMExceptionValue(detail="members: only users can be members of a group")
            value = str(member.value or "")
            member_id = row_id(value)
            if member_id is None:
                raise SCIMExceptionValue(detail=f"members: no user {value} in this account")
            member_ids.append(member_id)
            if member.display:
                displays[member_id] = member.display
        with transaction.atomic():
            if group is None:
                group = directory.group_create(
                    account=self.account(), embed_tenant=None, name=str(resource.display_name or "")
                )
            return directory.scim_group_save(
                group=group,
                name=resource.display_name,
                external_id=resource.external_id or "",
                member_ids=member_ids,
                member_displays=displays,
            )


class SCIMExceptionValue(SCIMException):
    """A value the service cannot store (400 ``invalidValue``)."""

    status = 400
    scim_type = "invalidValue"


class ScimGroupListView(_GroupMixin):
    @extend_schema(
        operation_id="Groups_list",
        parameters=_LIST_PARAMETERS,
        responses={**_ok(_scim_list(SCIM_GROUP)), 400: _INVALID},
    )
    def get(self, request: PlatformRequest) -> Response:
        return self.list_groups(dict(request.query_params.items()))

    @extend_schema(
        request=_body(SCIM_GROUP_INPUT),
        responses={**_ok(SCIM_GROUP, 201, "Created (Location: its URL)"), 400: _INVALID, 409: _GROUP_TAKEN},
    )
    def post(self, request: PlatformRequest) -> Response:
        group = self.write_group(group=None, body=self.body(), creating=True)
        payload = self.group_payload(group)
        return scim_response(self.group_dump(payload), status=201, headers={"Location": payload["meta"]["location"]})


class ScimGroupSearchView(_GroupMixin):
    audit_exempt = {"POST": "a search (RFC 7644 3.4.3): reads only"}
    audit_verbs: ClassVar[Mapping[str, str]] = {}

    @extend_schema(request=_body(SCIM_SEARCH), responses={**_ok(_scim_list(SCIM_GROUP)), 400: _INVALID})
    def post(self, request: PlatformRequest) -> Response:
        body = self.body()
        with resources.POLICY:
            SearchRequest.model_validate(body)
        return self.list_groups(body)


class ScimGroupDetailView(_GroupMixin):
    def _group(self, group_id: str) -> Group:
        return directory_selectors.scim_group(account=self.account(), group_id=group_id)

    def _answer(self, group: Group) -> Response:
        group = self._group(str(group.pk))
        return scim_response(self.group_dump(self.group_payload(group), self.response_parameters()))

    @extend_schema(parameters=_RETURNED, responses={**_ok(SCIM_GROUP), 400: _INVALID, 404: _GROUP_NOT_FOUND})
    def get(self, request: PlatformRequest, group_id: str) -> Response:
        return self._answer(self._group(group_id))

    @extend_schema(
        request=_body(SCIM_GROUP_INPUT),
        parameters=_RETURNED,
        responses={**_ok(SCIM_GROUP), 400: _INVALID, 404: _GROUP_NOT_FOUND, 409: _GROUP_TAKEN},
    )
    def put(self, request: PlatformRequest, group_id: str) -> Response:
        return self._answer(self.write_group(group=self._group(group_id), body=self.body(), creating=False))

    @extend_schema(
        request=_body(SCIM_PATCH),
        parameters=_RETURNED,
        responses={**_ok(SCIM_GROUP), 400: _INVALID, 404: _GROUP_NOT_FOUND, 409: _GROUP_TAKEN},
    )
    def patch(self, request: PlatformRequest, group_id: str) -> Response:
        body = self.body()
        with transaction.atomic(), resources.POLICY:
            group = self._group(group_id)
            current = ScimGroup.model_validate(self.group_payload(group), scim_ctx=None)
            normalized = _normalized_patch(body)
            self.audit_note(operations=_operation_names(normalized))
            operation = PatchOp[ScimGroup].model_validate(normalized, scim_ctx=Context.RESOURCE_PATCH_REQUEST)
            operation.patch(current)
            patched = current.model_dump(scim_ctx=Context.DEFAULT)
            for key in ("id", "meta"):
                patched.pop(key, None)
            group = self.write_group(group=group, body=patched, creating=False)
        return self._answer(group)

    @extend_schema(responses={204: None, 404: _GROUP_NOT_FOUND})
    def delete(self, request: PlatformRequest, group_id: str) -> Response:
        directory.group_delete(group=self._group(group_id), with_internal_members=True)
        return Response(status=204)


# --- discovery ----------------------------------------------------------------------------------------------


def _with_meta(data: dict[str, Any], resource_type: str, location: str) -> dict[str, Any]:
    return {**data, "meta": {"resourceType": resource_type, "location": location}}


class ServiceProviderConfigView(ScimView):
    @extend_schema(responses=_ok({**SCIM_RESOURCE, "description": "RFC 7643 5 ServiceProviderConfig"}))
    def get(self, request: Request) -> Response:
        data = resources.SERVICE_PROVIDER_CONFIG.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
        return scim_response(_with_meta(data, "ServiceProviderConfig", f"{self.base()}/ServiceProviderConfig"))


# A discovery endpoint that lists a catalog (RFC 7644 4: /ResourceTypes, /Schemas): every entry with its meta, or one
# entry by its id (a SCIM 404 for any other). A comment, not a docstring: the OpenAPI document describes these
# operations with ScimView's.
class _DiscoveryCatalogView(ScimView):
    resource_type: ClassVar[str]  # the entries' meta.resourceType
    endpoint: ClassVar[str]  # the path of the catalog under the SCIM root
    noun: ClassVar[str]  # an entry, in the 404's message

    def entries(self) -> Sequence[ResourceType | Schema]:
        raise NotImplementedError

    def items(self) -> list[dict[str, Any]]:
        return [
            _with_meta(
                entry.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE),
                self.resource_type,
                f"{self.base()}/{self.endpoint}/{entry.id}",
            )
            for entry in self.entries()
        ]

    def catalog_answer(self) -> Response:
        items = self.items()
        return scim_response(_list_response(items, len(items), 1))

    def entry_answer(self, entry_id: str) -> Response:
        for item in self.items():
            if item["id"] == entry_id:
                return scim_response(item)
        return scim_error(404, f"{self.noun} {entry_id} not found")


class ResourceTypeListView(_DiscoveryCatalogView):
    resource_type, endpoint, noun = "ResourceType", "ResourceTypes", "Resource type"

    def entries(self) -> list[ResourceType]:
        return self.service.resource_types

    @extend_schema(operation_id="ResourceTypes_list", responses=_ok(_scim_list(SCIM_RESOURCE)))
    def get(self, request: Request) -> Response:
        return self.catalog_answer()


class ResourceTypeDetailView(ResourceTypeListView):
    @extend_schema(responses={**_ok(SCIM_RESOURCE), 404: error("No resource type with this id")})
    def get(self, request: Request, type_id: str) -> Response:  # type: ignore[override]
        return self.entry_answer(type_id)


class SchemaListView(_DiscoveryCatalogView):
    resource_type, endpoint, noun = "Schema", "Schemas", "Schema"

    def entries(self) -> list[Schema]:
        return self.service.schemas

    @extend_schema(operation_id="Schemas_list", responses=_ok(_scim_list(SCIM_RESOURCE)))
    def get(self, request: Request) -> Response:
        return self.catalog_answer()


class SchemaDetailView(SchemaListView):
    @extend_schema(responses={**_ok(SCIM_RESOURCE), 404: error("No schema with this id")})
    def get(self, request: Request, schema_id: str) -> Response:  # type: ignore[override]
        return self.entry_answer(schema_id)


class RootSearchView(ScimView):
    """``POST /.search`` over every resource type at once: not offered (RFC 7644 3.4.3 makes it optional)."""

    audit_exempt = {"POST": "a search (RFC 7644 3.4.3): reads only"}

    @extend_schema(
        request=_body(SCIM_SEARCH),
        responses={501: error("Searching several resource types at once is not supported (RFC 7644 3.4.3)")},
    )
    def post(self, request: Request) -> Response:
        return scim_error(501, "Searching several resource types at once is not supported; use /Users/.search")


class NotFoundView(ScimView):
    """Any other path under the SCIM root: a SCIM 404 (an unknown endpoint is no resource)."""

    audit_exempt = dict.fromkeys(("POST", "PUT", "PATCH", "DELETE"), "answers 404 and changes nothing")

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs.pop("rest", None)
        return super().dispatch(request, *args, **kwargs)

    def get(self, request: Request) -> Response:
        return scim_error(404, "Not found")

    post = put = patch = delete = get
