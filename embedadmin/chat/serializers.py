"""Input contracts of the Chat API (spec 4.4 and 4.5)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from embedadmin.chat.services import SessionSettingsInput, StreamRequest
from embedadmin.core.fields import (
    JsonObjectField,
    RejectUnknownFieldsMixin,
    StrictBooleanField,
    StrictCharField,
    StrictEmailField,
    StrictIntegerField,
)
from embedadmin.directory.contracts import UserAttributeSerializer

MESSAGE_ID_RE = r"^[0-9]{13,}-message$"  # ASCII digits: \d also matches other scripts
# Fields that describe an external user and so cannot accompany internalId.
EXTERNAL_ONLY_FIELDS = ("userAttributes", "groups", "securityContext")


def _normalized_external_id(value: str) -> str:
    value = value.strip().lower()
    if not value:
        raise serializers.ValidationError("must not be empty")
    if any(character.isspace() for character in value):
        raise serializers.ValidationError("must not contain spaces")
    return value


class ChatSessionSettingsSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    externalId = StrictCharField(required=False, max_length=255)
    internalId = StrictCharField(required=False, max_length=254)
    email = StrictEmailField(required=False, max_length=254)  # the stored column's length
    userAttributes = serializers.ListField(child=UserAttributeSerializer(), required=False, max_length=1000)
    groups = serializers.ListField(child=StrictCharField(max_length=255), required=False, max_length=1000)
    securityContext = JsonObjectField(required=False)
    isEphemeral = StrictBooleanField(required=False)
    ephemeralTtlSeconds = StrictIntegerField(required=False, min_value=1, max_value=10 * 366 * 24 * 3600)

    def validate_externalId(self, value: str) -> str:
        return _normalized_external_id(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("externalId" in attrs) == ("internalId" in attrs):
            raise serializers.ValidationError("exactly one of externalId or internalId is required")
        if "internalId" in attrs:
            sent = [name for name in EXTERNAL_ONLY_FIELDS if name in attrs]
            if sent:
                raise serializers.ValidationError(f"{', '.join(sent)}: not allowed with internalId")
        return attrs

    def to_input(self, data: dict[str, Any]) -> SessionSettingsInput:
        return SessionSettingsInput(
            external_id=data.get("externalId"),
            internal_id=data.get("internalId"),
            email=data.get("email"),
            user_attributes=[(a["name"], a["value"]) for a in data["userAttributes"]]
            if "userAttributes" in data
            else None,
            groups=data.get("groups"),
            security_context=data.get("securityContext"),
            is_ephemeral=data.get("isEphemeral"),
            ephemeral_ttl_seconds=data.get("ephemeralTtlSeconds"),
        )


class StreamChatStateSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    input = StrictCharField(required=False, trim_whitespace=False, max_length=100_000)
    chatId = StrictCharField(required=False, max_length=64)
    messageId = serializers.RegexField(
        MESSAGE_ID_RE, required=False, max_length=64, error_messages={"invalid": "must be '<unix ms>-message'"}
    )
    sessionSettings = ChatSessionSettingsSerializer(required=False)
    activeBranchName = StrictCharField(required=False, max_length=255)
    isDefaultBranch = StrictBooleanField(required=False)

    def stream_request(self) -> StreamRequest:
        data = self.validated_data
        return StreamRequest(
            input=data.get("input"),
            chat_id=data.get("chatId"),
            message_id=data.get("messageId"),
            branch_name=data.get("activeBranchName"),
            is_default_branch=data.get("isDefaultBranch"),
        )

    def session_settings(self) -> SessionSettingsInput | None:
        data = self.validated_data.get("sessionSettings")
        return None if data is None else ChatSessionSettingsSerializer().to_input(data)


class AbortSessionSettingsSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    externalId = StrictCharField(required=False, max_length=255)
    internalId = StrictCharField(required=False, max_length=254)

    def validate_externalId(self, value: str) -> str:
        return _normalized_external_id(value)


class AbortSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    chatId = StrictCharField(max_length=64)
    sessionSettings = AbortSessionSettingsSerializer(required=False)
