"""The API shapes of directory objects that several APIs share (spec 2.16): the generate-session
definitions, the Platform API's user attributes and the embed-tenant admin lists read and write these."""

from __future__ import annotations

from rest_framework import serializers

from embedadmin.core.fields import RejectUnknownFieldsMixin, StrictCharField
from embedadmin.directory.models import AttributeDefinition


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
