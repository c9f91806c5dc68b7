"""Input contracts of the embedding endpoints."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rest_framework import serializers

from embedadmin.accounts.services import embed_theme_check, locale_check, timezone_check
from embedadmin.core.errors import BadRequest
from embedadmin.core.fields import (
    MAX_BIGINT,
    HttpUrlField,
    JsonObjectField,
    RejectUnknownFieldsMixin,
    StrictBooleanField,
    StrictCharField,
    StrictEmailField,
    StrictIntegerField,
)
from embedadmin.directory.contracts import (
    AttributeDefinitionSerializer,
    UserAttributeSerializer,
    attribute_definition_input,
)
from embedadmin.directory.models import EMBED_TENANT_NAME_RE
from embedadmin.directory.services import GroupDefinitionInput, ProfileInput
from embedadmin.embedding.services import EXTERNAL_ONLY_FIELDS, GenerateSessionInput


class UserProfileSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    displayName = StrictCharField(required=False, allow_blank=True, max_length=255, trim_whitespace=False)
    picture = HttpUrlField(required=False, max_length=2048)


class GroupDefinitionSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    name = StrictCharField(max_length=255)
    description = StrictCharField(required=False, allow_blank=True)


def _checked(check: Callable[..., Any], value: Any, name: str) -> Any:
    """A value by one of the account's embed-setting rules, its BadRequest as this field's error."""
    try:
        return check(value, name=name)
    except BadRequest as exc:
        message = exc.message
        if message.startswith(f"{name}."):  # a nested key: reported under its path, as DRF nests errors
            path, _, text = message[len(name) + 1 :].partition(": ")
            raise serializers.ValidationError({path: [text]}) from None
        raise serializers.ValidationError(message.removeprefix(f"{name}: ")) from None


class SessionSettingsSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """``settings`` of generate-session: each key tri-state (omitted or null inherits the account's)."""

    showDashboardChat = StrictBooleanField(required=False, allow_null=True)
    allowAi = StrictBooleanField(required=False, allow_null=True)
    allowExport = StrictBooleanField(
        required=False, allow_null=True, help_text="Whether the viewer may download a tile's data as CSV (PNG too)"
    )
    locale = StrictCharField(required=False, allow_null=True, max_length=35)
    timezone = StrictCharField(required=False, allow_null=True, max_length=64)

    def validate_locale(self, value: str | None) -> str | None:
        return None if value is None else _checked(locale_check, value, "locale")

    def validate_timezone(self, value: str | None) -> str | None:
        return None if value is None else _checked(timezone_check, value, "timezone")


class EmbedThemeField(serializers.Field):
    """``embedTheme``: an EmbedTheme object (known keys only, colors ``#hex``)."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        return _checked(embed_theme_check, data, "embedTheme")

    def to_representation(self, value: Any) -> Any:
        return value


class GenerateSessionSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    deploymentId = StrictIntegerField(min_value=1, max_value=MAX_BIGINT)
    externalId = StrictCharField(required=False, allow_blank=True, max_length=255)
    internalId = StrictCharField(required=False, max_length=150)
    email = StrictEmailField(required=False, max_length=254)  # the stored column's length
    userProfile = UserProfileSerializer(required=False)
    embedTenantName = serializers.RegexField(
        EMBED_TENANT_NAME_RE,
        required=False,
        error_messages={"invalid": "must be 5 to 36 characters: a-z, 0-9 and '-', starting with a letter"},
    )
    creatorMode = StrictBooleanField(required=False)
    userAttributes = serializers.ListField(child=UserAttributeSerializer(), required=False, max_length=1000)
    groups = serializers.ListField(child=StrictCharField(max_length=255), required=False, max_length=1000)
    userAttributeDefinitions = serializers.ListField(
        child=AttributeDefinitionSerializer(), required=False, max_length=1000
    )
    groupDefinitions = serializers.ListField(child=GroupDefinitionSerializer(), required=False, max_length=1000)
    securityContext = JsonObjectField(required=False)
    settings = SessionSettingsSerializer(required=False)
    embedTheme = EmbedThemeField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "internalId" in self.initial_data:
            sent = [name for name in EXTERNAL_ONLY_FIELDS if name in self.initial_data]
            if sent:
                raise serializers.ValidationError(f"{', '.join(sent)}: not allowed with internalId")
            if "email" in self.initial_data:
                raise serializers.ValidationError("email: only allowed with externalId")
        return attrs


def _session_input(data: Mapping[str, Any]) -> GenerateSessionInput:
    """The service's input from the serializer's validated data."""
    external_id = data.get("externalId")
    profile = data.get("userProfile")
    return GenerateSessionInput(
        deployment_id=data["deploymentId"],
        external_id=external_id.strip().lower() if external_id is not None else None,
        internal_id=data.get("internalId"),
        email=data.get("email"),
        profile=ProfileInput(display_name=profile.get("displayName"), picture=profile.get("picture"))
        if profile is not None
        else None,
        embed_tenant_name=data.get("embedTenantName"),
        creator_mode=data.get("creatorMode", False),
        user_attributes=[(a["name"], a["value"]) for a in data["userAttributes"]] if "userAttributes" in data else None,
        groups=data.get("groups"),
        attribute_definitions=[attribute_definition_input(d) for d in data.get("userAttributeDefinitions", [])],
        group_definitions=[
            GroupDefinitionInput(name=d["name"], description=d.get("description"))
            for d in data.get("groupDefinitions", [])
        ],
        security_context=data.get("securityContext"),
        settings=dict(data.get("settings") or {}),
        embed_theme=data.get("embedTheme"),
    )


class SessionIdSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    sessionId = StrictCharField(max_length=200)


def generate_session_input(data: Any) -> GenerateSessionInput:
    """Parse a generate-session body (its ``ValidationError`` becomes the 400)."""
    serializer = GenerateSessionSerializer(data=data)
    serializer.is_valid(raise_exception=True)
    return _session_input(serializer.validated_data)
