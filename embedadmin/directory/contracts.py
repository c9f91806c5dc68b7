"""The API shapes of directory objects that several APIs share (spec 2.15, 2.16): generate-session,
the Chat API's sessionSettings, the Platform API's user attributes and the embed-tenant admin lists
read and write these."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

from embedadmin.core.fields import JsonValueField, RejectUnknownFieldsMixin, StrictCharField
from embedadmin.directory.models import AttributeDefinition
from embedadmin.directory.services import AttributeDefinitionInput


class UserAttributeSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """A user attribute value as a client sends it (spec 2.15): ``{name, value}``; the value's type is
    checked against its definition by the service, ``null`` clears it."""

    name = StrictCharField(max_length=255)
    value = JsonValueField(allow_null=True)


class AttributeDefinitionSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """An attribute definition as a client sends it: ``{name, type, displayName?, defaultValue?, description?}``."""

    name = StrictCharField(max_length=255)
    type = serializers.ChoiceField(choices=AttributeDefinition.Type.values)
    displayName = StrictCharField(required=False, allow_blank=True, max_length=255)
    defaultValue = StrictCharField(required=False, allow_blank=True)
    description = StrictCharField(required=False, allow_blank=True)


# API names of AttributeDefinitionSerializer's fields that differ from the service's.
_ATTRIBUTE_DEFINITION_RENAMES = {"displayName": "display_name", "defaultValue": "default_value"}


def attribute_definition_input(data: Mapping[str, Any]) -> AttributeDefinitionInput:
    """The service's input from AttributeDefinitionSerializer's validated data (omitted fields are None)."""
    return AttributeDefinitionInput(
        name=data["name"],
        type=data["type"],
        display_name=data.get("displayName"),
        default_value=data.get("defaultValue"),
        description=data.get("description"),
    )


def attribute_definition_changes(data: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a partial AttributeDefinitionSerializer's validated data, by the service's names."""
    return {_ATTRIBUTE_DEFINITION_RENAMES.get(k, k): v for k, v in data.items()}


def attribute_definition_item(definition: AttributeDefinition) -> dict:
    """An attribute definition as the APIs return it."""
    return {
        "id": definition.pk,
        "name": definition.name,
        "type": definition.type,
        "displayName": definition.display_name,
        "defaultValue": definition.default_value,
        "description": definition.description,
    }
