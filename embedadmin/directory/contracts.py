"""The API shapes of directory objects that several APIs share (spec 2.15, 2.16): generate-session,
the Chat API's sessionSettings, the Platform API's user attributes and the embed-tenant admin lists
read and write these."""

from __future__ import annotations

from rest_framework import serializers

from embedadmin.core.fields import JsonValueField, RejectUnknownFieldsMixin, StrictCharField
from embedadmin.directory.models import AttributeDefinition


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
