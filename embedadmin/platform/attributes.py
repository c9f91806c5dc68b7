"""``/api/v1/user-attributes`` (tenant-wide definitions) and ``/api/v1/user-attribute-values`` (Cube's shapes,
reference 2.7).

A value's ``userId`` names an **internal** user of the caller's account (``/api/v1/users/{id}``; Cube's users
are internal users): the values are the ones SCIM writes through ``urn:cube:params:1.0:UserAttribute``
(``directory.InternalAttributeValue``). External (embed) users get their values from generate-session.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from embedadmin.accounts import selectors as accounts_selectors
from embedadmin.accounts.authentication import PlatformRequest
from embedadmin.core.edge.bodies import json_object_body
from embedadmin.core.edge.ids import row_id
from embedadmin.core.errors import BadRequest
from embedadmin.core.fields import JsonValueField, RejectUnknownFieldsMixin, StrictCharField
from embedadmin.core.pagination import paginate
from embedadmin.directory import selectors as directory_selectors
from embedadmin.directory import services as directory
from embedadmin.directory.contracts import (
    AttributeDefinitionSerializer,
    attribute_definition_changes,
    attribute_definition_input,
    attribute_definition_item,
)
from embedadmin.directory.models import AttributeDefinition
from embedadmin.platform.openapi import INVALID, error, list_of, page_of, page_operation
from embedadmin.platform.platform_view import PlatformView

ATTRIBUTE_DEFINITION = inline_serializer(
    "UserAttribute",
    {
        "id": serializers.IntegerField(),
        "name": serializers.CharField(),
        "type": serializers.ChoiceField(choices=AttributeDefinition.Type.values),
        "displayName": serializers.CharField(allow_blank=True),
        "defaultValue": serializers.CharField(allow_blank=True),
        "description": serializers.CharField(allow_blank=True),
    },
)
ATTRIBUTE_NOT_FOUND = error("No tenant-wide user attribute with this id in the caller's account")


class AttributeDefinitionUpdateSerializer(AttributeDefinitionSerializer):
    """PUT/PATCH: displayName, description and defaultValue; ``name`` and ``type`` are accepted only unchanged
    (the service answers 400 ``cannot change type``)."""

    name = StrictCharField(max_length=255, required=False)
    type = serializers.ChoiceField(choices=AttributeDefinition.Type.values, required=False)


class UserAttributeListView(PlatformView):
    """``GET ?name&type&first&after`` -> ``{items, data, count, pageInfo}`` (``data`` is ``items`` again and
    ``count`` the number of definitions matching the filters, as Cube answers); ``POST`` creates (201)."""

    audit_resource = "user_attribute"

    @page_operation(
        page_of("UserAttributePage", ATTRIBUTE_DEFINITION, data=True, count=True),
        operation_id="user_attributes_list",
        filters=[
            OpenApiParameter("name", str, description="Definitions whose name contains this text"),
            OpenApiParameter("type", str, enum=AttributeDefinition.Type.values),
        ],
        errors={400: error("An unknown type, or an invalid page parameter")},
    )
    def get(self, request: PlatformRequest) -> Response:
        params = request.query_params
        attribute_type = params.get("type")
        if attribute_type is not None and attribute_type not in AttributeDefinition.Type.values:
            raise BadRequest(f"type must be one of {', '.join(AttributeDefinition.Type.values)}")
        definitions = directory_selectors.attribute_definitions_filtered(
            account=request.user.account, name=params.get("name"), attribute_type=attribute_type
        )
        page = paginate(definitions, params=params, order=("name", "id"), types=(str, int))
        body = page.as_dict(attribute_definition_item)
        return Response(
            {"items": body["items"], "data": body["items"], "count": definitions.count(), "pageInfo": body["pageInfo"]}
        )

    @extend_schema(
        request=AttributeDefinitionSerializer,
        responses={201: ATTRIBUTE_DEFINITION, 400: INVALID, 409: error("A user attribute with this name exists")},
    )
    def post(self, request: PlatformRequest) -> Response:
        serializer = AttributeDefinitionSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        definition = directory.attribute_definition_create(
            account=request.user.account,
            embed_tenant=None,
            data=attribute_definition_input(serializer.validated_data),
        )
        return Response(attribute_definition_item(definition), status=201)


class UserAttributeDetailView(PlatformView):
    audit_resource = "user_attribute"

    def _definition(self, request: PlatformRequest, attribute_id: int) -> AttributeDefinition:
        return directory_selectors.attribute_definition_of(
            account=request.user.account, embed_tenant=None, attribute_id=attribute_id
        )

    @extend_schema(responses={200: ATTRIBUTE_DEFINITION, 404: ATTRIBUTE_NOT_FOUND})
    def get(self, request: PlatformRequest, attribute_id: int) -> Response:
        return Response(attribute_definition_item(self._definition(request, attribute_id)))

    @extend_schema(
        request=AttributeDefinitionUpdateSerializer,
        responses={
            200: ATTRIBUTE_DEFINITION,
            400: error("Invalid input, or a changed name or type"),
            404: ATTRIBUTE_NOT_FOUND,
        },
    )
    def patch(self, request: PlatformRequest, attribute_id: int) -> Response:
        definition = self._definition(request, attribute_id)
        serializer = AttributeDefinitionUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        changes = attribute_definition_changes(serializer.validated_data)
        definition = directory.attribute_definition_update(definition=definition, changes=changes)
        return Response(attribute_definition_item(definition))

    put = patch

    @extend_schema(
        responses={204: None, 400: error("Users still have values of this attribute"), 404: ATTRIBUTE_NOT_FOUND}
    )
    def delete(self, request: PlatformRequest, attribute_id: int) -> Response:
        directory.attribute_definition_delete(definition=self._definition(request, attribute_id))
        return Response(status=204)


# --- values ----------------------------------------------------------------------------------------------


class UserAttributeValueSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """Cube's ``UserAttributeValueCreateInput``: ids as strings (numbers are accepted too), any JSON value."""

    userId = serializers.CharField(min_length=1, max_length=19)
    userAttributeId = serializers.CharField(min_length=1, max_length=19)
    value = JsonValueField(allow_null=True, required=False, default=None)

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            data = {k: str(v) if k in ("userId", "userAttributeId") and _is_int(v) else v for k, v in data.items()}
        return super().to_internal_value(data)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def formatted_value(value: Any) -> str | None:
    """A value as text: arrays joined with ``", "``, integral numbers without a fraction."""
    if value is None:
        return None
    if isinstance(value, list):
        return ", ".join(formatted_value(v) or "" for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


ATTRIBUTE_VALUE = inline_serializer(
    "UserAttributeValue",
    {
        "userId": serializers.IntegerField(),
        "userAttributeId": serializers.IntegerField(),
        "name": serializers.CharField(),
        "type": serializers.ChoiceField(choices=AttributeDefinition.Type.values),
        "value": serializers.JSONField(help_text="A value of the attribute's type; null: none"),
        "formattedValue": serializers.CharField(allow_null=True),
        "displayName": serializers.CharField(allow_blank=True),
        "description": serializers.CharField(allow_blank=True),
    },
)


def attribute_value_item(user_id: int, definition: AttributeDefinition, value: Any) -> dict[str, Any]:
    """Cube's ``UserAttributeValue`` (ids as integers in the output, as Cube answers)."""
    return {
        "userId": user_id,
        "userAttributeId": definition.pk,
        "name": definition.name,
        "type": definition.type,
        "value": value,
        "formattedValue": formatted_value(value),
        "displayName": definition.display_name,
        "description": definition.description,
    }


class UserAttributeValueView(PlatformView):
    """``POST /api/v1/user-attribute-values``: set (upsert) one internal user's value of a tenant-wide attribute,
    type-checked by the rule every attribute value follows; ``null`` clears it."""

    audit_resource = "user_attribute_values"
    audit_verbs = {"POST": "set"}

    @extend_schema(
        request=UserAttributeValueSerializer,
        responses={
            200: ATTRIBUTE_VALUE,
            400: error("Invalid input, or a value not of the attribute's type"),
            404: error("No such internal user or user attribute in the caller's account"),
        },
    )
    def post(self, request: PlatformRequest) -> Response:
        serializer = UserAttributeValueSerializer(data=json_object_body(request, fields=None))
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        account = request.user.account
        user = accounts_selectors.internal_user_of(account=account, user_id=data["userId"])
        attribute_id = row_id(data["userAttributeId"])
        if attribute_id is None:
            raise BadRequest("userAttributeId must be the decimal id of a user attribute")
        definition = directory_selectors.attribute_definition_of(
            account=account, embed_tenant=None, attribute_id=attribute_id
        )
        directory.internal_user_attribute_value_set(user_id=user.pk, definition=definition, value=data["value"])
        return Response(attribute_value_item(user.pk, definition, data["value"]))


class UserAttributeValueListView(PlatformView):
    """``GET /api/v1/user-attribute-values/{userId}``: the internal user's stored values, by attribute name (an
    array, no pagination, as Cube answers)."""

    @extend_schema(
        responses={
            200: OpenApiResponse(list_of(ATTRIBUTE_VALUE), description="The user's values"),
            404: error("No internal user with this id in the caller's account"),
        }
    )
    def get(self, request: PlatformRequest, user_id: str) -> Response:
        account = request.user.account
        user = accounts_selectors.internal_user_of(account=account, user_id=user_id)
        rows = directory_selectors.internal_user_attribute_values(account=account, user_id=user.pk)
        return Response([attribute_value_item(user.pk, row.definition, row.value) for row in rows])
