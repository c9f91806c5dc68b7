"""Input contracts of the Chat API (spec 4.4 and 4.5)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rest_framework import serializers

from embedadmin.accounts.services import locale_check, timezone_check
from embedadmin.chat.providers.base import CONTEXT_FILTER_OPERATORS
from embedadmin.chat.services import SessionSettingsInput, StreamRequest
from embedadmin.core.errors import BadRequest
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
DASHBOARD_PUBLIC_ID_RE = r"^[0-9A-Za-z]{12}$"
MEMBER_RE = r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$"
VALUELESS_OPERATORS = frozenset({"set", "notSet"})
MAX_CONTEXT_FILTERS = 50
MAX_FILTER_VALUES = 100
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


class StrictRegexField(serializers.RegexField):
    """A string matching a pattern; any other JSON type is refused (DRF would match the number 1 as "1")."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            raise serializers.ValidationError("Not a valid string.")
        return str(super().to_internal_value(data))


class ContextFilterSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """One filter of the dashboard the question is asked from, as Cube writes it."""

    member = StrictRegexField(
        MEMBER_RE, max_length=255, error_messages={"invalid": "must be '<cube or view>.<member>'"}
    )
    operator = serializers.ChoiceField(choices=CONTEXT_FILTER_OPERATORS)
    values = serializers.ListField(
        child=StrictCharField(max_length=1000, allow_blank=True, trim_whitespace=False),
        required=False,
        max_length=MAX_FILTER_VALUES,
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs.setdefault("values", [])
        if not attrs["values"] and attrs["operator"] not in VALUELESS_OPERATORS:
            raise serializers.ValidationError(f"values: {attrs['operator']} needs at least one value")
        return attrs


class DashboardContextSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    publicId = StrictRegexField(DASHBOARD_PUBLIC_ID_RE, error_messages={"invalid": "must be 12 letters or digits"})
    filters = serializers.ListField(child=ContextFilterSerializer(), required=False, max_length=MAX_CONTEXT_FILTERS)


class ChatContextSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """What the user is looking at when they ask: a dashboard and its current filters, the locale they read numbers
    and dates in, and the time zone the page queries in (all optional)."""

    dashboard = DashboardContextSerializer(required=False)
    locale = StrictCharField(required=False, max_length=35)
    timezone = StrictCharField(required=False, max_length=64)

    def validate_locale(self, value: str) -> str:
        return _checked(locale_check, value)

    def validate_timezone(self, value: str) -> str:
        return _checked(timezone_check, value)

    def to_json(self, data: dict[str, Any]) -> dict[str, Any]:
        """The context as it is stored with the run: every key present, in one order, so a resend compares equal."""
        stored: dict[str, Any] = {}
        dashboard = data.get("dashboard")
        if dashboard is not None:
            filters = [
                {"member": f["member"], "operator": f["operator"], "values": list(f["values"])}
                for f in dashboard.get("filters", [])
            ]
            stored["dashboard"] = {"publicId": dashboard["publicId"], "filters": filters}
        for key in ("locale", "timezone"):
            if data.get(key):
                stored[key] = data[key]
        return stored


def _checked(check: Callable[[Any], str], value: str) -> str:
    """``value`` through an account setting's ``check``, its refusal as this field's error (without its name)."""
    try:
        return check(value)
    except BadRequest as exc:
        raise serializers.ValidationError(exc.message.split(": ", 1)[-1]) from None


class StreamChatStateSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    input = StrictCharField(required=False, trim_whitespace=False, max_length=100_000)
    chatId = StrictCharField(required=False, max_length=64)
    messageId = serializers.RegexField(
        MESSAGE_ID_RE, required=False, max_length=64, error_messages={"invalid": "must be '<unix ms>-message'"}
    )
    sessionSettings = ChatSessionSettingsSerializer(required=False)
    activeBranchName = StrictCharField(required=False, max_length=255)
    isDefaultBranch = StrictBooleanField(required=False)

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        # Declared here: a class attribute named ``context`` would shadow the serializer's own ``context``.
        fields["context"] = ChatContextSerializer(required=False)
        return fields

    def stream_request(self) -> StreamRequest:
        data = self.validated_data
        return StreamRequest(
            input=data.get("input"),
            chat_id=data.get("chatId"),
            message_id=data.get("messageId"),
            branch_name=data.get("activeBranchName"),
            is_default_branch=data.get("isDefaultBranch"),
            context=ChatContextSerializer().to_json(data.get("context") or {}),
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
