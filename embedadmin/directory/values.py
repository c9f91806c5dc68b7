"""Typed user-attribute values: which JSON values fit which attribute type."""

from __future__ import annotations

import json
import math
from typing import Any

from embedadmin.core.errors import BadRequest
from embedadmin.directory.models import AttributeDefinition

ATTRIBUTE_TYPES = tuple(AttributeDefinition.Type.values)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def value_matches_type(attribute_type: str, value: Any) -> bool:
    """Whether a JSON value is of an attribute type (null is handled by the caller: it clears)."""
    if attribute_type == "string":
        return isinstance(value, str)
    if attribute_type == "number":
        return _is_number(value)
    if attribute_type == "string_array":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if attribute_type == "number_array":
        return isinstance(value, list) and all(_is_number(v) for v in value)
    return False


def default_value_parse(attribute_type: str, raw: str) -> Any:
    """The typed value a definition's string ``defaultValue`` stands for ('' means no default).

    Numbers are written as JSON numbers (``"5"``), arrays as JSON arrays (``'["a", "b"]'``).
    """
    if raw == "":
        return None
    if attribute_type == "string":
        return raw
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if not value_matches_type(attribute_type, value):
        raise BadRequest(f"defaultValue {raw!r} is not a valid {attribute_type}")
    return value
