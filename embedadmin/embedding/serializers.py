"""Input contracts of the embedding endpoints."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from rest_framework import serializers

from embedadmin.core.fields import (
    MAX_BIGINT,
    SURROGATE,
    HttpUrlField,
    JsonObjectField,
    RejectUnknownFieldsMixin,
    StrictBooleanField,
    StrictCharField,
    StrictEmailField,
    StrictIntegerField,
    is_http_url,
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


class SessionSettingsSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    showDashboardChat = StrictBooleanField(required=False, allow_null=True)


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

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "internalId" in self.initial_data:
            sent = [name for name in EXTERNAL_ONLY_FIELDS if name in self.initial_data]
            if sent:
                raise serializers.ValidationError(f"{', '.join(sent)}: not allowed with internalId")
            if "email" in self.initial_data:
                raise serializers.ValidationError("email: only allowed with externalId")
        return attrs


def input_from(data: Mapping[str, Any]) -> GenerateSessionInput:
    """The service's input from validated data (the serializer's, or the fast path's, which is equal)."""
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
        show_dashboard_chat=data.get("settings", {}).get("showDashboardChat"),
    )


class SessionIdSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    sessionId = StrictCharField(max_length=200)


# --- the fast path ------------------------------------------------------------------------------------
#
# Instantiating the serializer above deep-copies its tree of fields, which costs generate-session about
# a millisecond of CPU per call. The common request (an external user with attributes, groups and a
# security context) is checked here by plain code that accepts only what the serializer would accept
# unchanged and returns exactly its validated data; anything else (internalId, definitions, a string
# with surrounding whitespace, a value out of range...) returns None and goes to the serializer, which
# stays the authority and words every error. tests/embedding/test_contract_fast_path.py holds the two
# to the same answers.

# Every field but the ones that only the serializer handles (internalId and creator-mode definitions).
_FAST_FIELDS = frozenset(GenerateSessionSerializer._declared_fields) - {
    "internalId",
    "userAttributeDefinitions",
    "groupDefinitions",
}
_TENANT_NAME = re.compile(EMBED_TENANT_NAME_RE)
# The serializer's own limits, so that the two cannot drift apart.
_FIELDS = GenerateSessionSerializer._declared_fields
_PROFILE = UserProfileSerializer._declared_fields
_MAX_DEPLOYMENT_ID = _FIELDS["deploymentId"].max_value
_MAX_EXTERNAL_ID = _FIELDS["externalId"].max_length
_MAX_EMAIL = _FIELDS["email"].max_length
_MAX_ATTRIBUTES = _FIELDS["userAttributes"].max_length
_MAX_ATTRIBUTE_NAME = UserAttributeSerializer._declared_fields["name"].max_length
_MAX_GROUPS = _FIELDS["groups"].max_length
_MAX_GROUP_NAME = _FIELDS["groups"].child.max_length
_MAX_DISPLAY_NAME = _PROFILE["displayName"].max_length
_MAX_PICTURE = _PROFILE["picture"].max_length


def _plain(value: Any, max_length: int, *, blank: bool = False) -> bool:
    """A string the serializer's CharField keeps as it is: no surrounding whitespace to trim, within
    ``max_length``, and without NUL or surrogate characters (which it refuses)."""
    return (
        type(value) is str
        and len(value) <= max_length
        and (blank or value != "")
        and value == value.strip()
        and "\x00" not in value
        and SURROGATE.search(value) is None
    )


def _storable(value: Any) -> bool:
    """JSON the serializer's JSONField keeps: finite numbers (``1e400`` parses to infinity, which it
    refuses), strings and keys without NUL."""
    kind = type(value)
    if kind is str:
        return "\x00" not in value
    if kind is float:
        return math.isfinite(value)
    if kind is dict:
        return all(type(k) is str and "\x00" not in k and _storable(v) for k, v in value.items())
    if kind is list:
        return all(_storable(v) for v in value)
    return value is None or kind in (int, bool)


def _fast_profile(value: Any) -> bool:
    if type(value) is not dict or not value.keys() <= {"displayName", "picture"}:
        return False
    name = value.get("displayName", "")
    if type(name) is not str or len(name) > _MAX_DISPLAY_NAME or "\x00" in name or SURROGATE.search(name):
        return False
    return "picture" not in value or (_plain(value["picture"], _MAX_PICTURE) and is_http_url(value["picture"]))


def _fast_attributes(value: Any) -> bool:
    if type(value) is not list or len(value) > _MAX_ATTRIBUTES:
        return False
    return all(
        type(item) is dict and item.keys() == {"name", "value"} and _plain(item["name"], _MAX_ATTRIBUTE_NAME)
        for item in value
    ) and all(_storable(item["value"]) for item in value)


def validated_fast(data: Any) -> dict[str, Any] | None:
    """The serializer's validated data for a common, well-formed request; None for anything else."""
    if type(data) is not dict or not data.keys() <= _FAST_FIELDS:
        return None
    deployment_id = data.get("deploymentId")
    if type(deployment_id) is not int or not 1 <= deployment_id <= _MAX_DEPLOYMENT_ID:
        return None
    if not _plain(data.get("externalId"), _MAX_EXTERNAL_ID, blank=True):
        return None
    if "email" in data:
        if not _plain(data["email"], _MAX_EMAIL):
            return None
        try:
            validate_email(data["email"])
        except DjangoValidationError:
            return None
    if "userProfile" in data and not _fast_profile(data["userProfile"]):
        return None
    if "embedTenantName" in data:
        name = data["embedTenantName"]
        if not _plain(name, 36) or _TENANT_NAME.search(name) is None:
            return None
    if "creatorMode" in data and type(data["creatorMode"]) is not bool:
        return None
    if "userAttributes" in data and not _fast_attributes(data["userAttributes"]):
        return None
    if "groups" in data:
        groups = data["groups"]
        if type(groups) is not list or len(groups) > _MAX_GROUPS or not all(_plain(g, _MAX_GROUP_NAME) for g in groups):
            return None
    if "securityContext" in data:
        context = data["securityContext"]
        if type(context) is not dict or not _storable(context):
            return None
    if "settings" in data:
        chat_settings = data["settings"]
        if type(chat_settings) is not dict or not chat_settings.keys() <= {"showDashboardChat"}:
            return None
        show_chat = chat_settings.get("showDashboardChat")
        if show_chat is not None and type(show_chat) is not bool:
            return None
    return data


def fast_input(data: Any) -> GenerateSessionInput | None:
    """The service's input for a body the fast path accepts as is; None for anything else."""
    validated = validated_fast(data)
    return None if validated is None else input_from(validated)


def generate_session_input(data: Any) -> GenerateSessionInput:
    """Parse a generate-session body: the fast path when it can, else the serializer (whose
    ``ValidationError`` becomes the 400)."""
    parsed = fast_input(data)
    if parsed is not None:
        return parsed
    serializer = GenerateSessionSerializer(data=data)
    serializer.is_valid(raise_exception=True)
    return input_from(serializer.validated_data)
