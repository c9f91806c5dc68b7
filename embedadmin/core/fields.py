"""Strict JSON serializer fields: a number is not a string and ``"true"`` is not a boolean.

DRF's stock fields coerce (``123`` becomes ``"123"``, ``"yes"`` becomes ``True``); an API whose
values feed access policies must not guess, so these refuse the wrong JSON type instead.

Also what every JSON entry point refuses the same way: ids beyond a bigint (``MAX_BIGINT``), unpaired UTF-16
surrogates (``loads_json``, ``has_lone_surrogate``), NUL characters and numbers beyond a double's range in
stored JSON values; and the product's one rule for an email address (``validate_email_address``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.validators import EmailValidator
from django.core.validators import validate_email as validate_email_address
from django.db import models
from rest_framework import serializers
from rest_framework.settings import api_settings


class StrictCharField(serializers.CharField):
    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


# The product's one rule for an email address: RFC 5321/5322 syntax (a dot-atom or quoted local part; a domain name
# or an address literal), whatever the domain. It is Django's validator, the one the models' EmailField and the
# panel's forms apply; StrictEmailField (generate-session, the Platform API, the Chat API) and SCIM's ``emails``
# apply it too. Special-use and reserved names (``corp.local`` of Active Directory forests, ``.test``, ``.internal``)
# are addresses organizations use: nothing refuses them for their domain (pydantic's EmailStr does, through
# email-validator, which is why SCIM does not use it). A domain of one label (``user@corp``) is refused, as SMTP
# takes fully qualified names only (RFC 5321 2.3.5), except ``localhost``. Where Django reads the RFCs more narrowly
# (a quoted local part holding a space, an IPv6 literal with RFC 5321's ``IPv6:`` tag) its reading stays the rule:
# one rule for every door, the panel's forms included.
EMAIL_ADDRESS_MAX_LENGTH = 254  # RFC 5321 4.5.3.1.3 (a path of 256 octets with its angle brackets); the columns'


class StrictEmailField(serializers.EmailField):
    """An email address given as a JSON string (DRF's field would take the number 1 as the text "1"), checked by
    :data:`validate_email_address`."""

    default_error_messages = {"not_string": "Not a valid string."}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # DRF's EmailField adds a validator of its own making; the product's rule stands in its place.
        self.validators = [v for v in self.validators if not isinstance(v, EmailValidator)] + [validate_email_address]

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("not_string")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {"invalid": "Must be a boolean."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictIntegerField(serializers.IntegerField):
    default_error_messages = {"invalid": "Must be an integer."}

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


# The largest value of a 64-bit integer column (PostgreSQL bigint, SQLite INTEGER): every row id. A larger
# number from a client is refused before the database, which cannot even compare it with an id.
MAX_BIGINT = models.BigIntegerField.MAX_BIGINT

# A UTF-16 surrogate code point: JSON's "\ud800" escape without its pair decodes to one, and UTF-8 cannot
# encode it, so no database, log line or JSON answer can carry it.
SURROGATE = re.compile("[\ud800-\udfff]")
UNPAIRED_SURROGATE = "a string holds an unpaired UTF-16 surrogate escape (\\ud800-\\udfff)"


def json_any(value: Any, test: Callable[[Any], bool]) -> bool:
    """Whether ``test`` holds for any object key or scalar (string, number, boolean, null) of a parsed JSON value,
    at any depth."""
    if isinstance(value, dict):
        return any(test(k) or json_any(v, test) for k, v in value.items())
    if isinstance(value, list):
        return any(json_any(v, test) for v in value)
    return test(value)


def _lone_surrogate(scalar: Any) -> bool:
    return isinstance(scalar, str) and SURROGATE.search(scalar) is not None


def has_lone_surrogate(value: Any) -> bool:
    """Whether a parsed JSON value has an unpaired surrogate in any string or object key, at any depth."""
    return json_any(value, _lone_surrogate)


DEFAULT_MAX_JSON_DEPTH = 64


def max_json_depth() -> int:
    """How deeply arrays and objects may nest in a JSON body or parameter (``LIMITS["MAX_JSON_DEPTH"]``)."""
    limits = getattr(settings, "LIMITS", None)
    return int(limits["MAX_JSON_DEPTH"]) if limits else DEFAULT_MAX_JSON_DEPTH


def too_deep_message(limit: int) -> str:
    """The refusal of JSON nested deeper than ``limit`` (the same as for nesting the decoder gives up on)."""
    return "nested too deeply"


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether arrays and objects nest more than ``limit`` levels in a parsed JSON value (walked without
    recursion, so any depth is safe to ask about)."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        node, depth = pending.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def check_json_depth(text: str | bytes, value: Any, limit: int | None = None) -> None:
    """Raise ValueError when ``value`` (parsed from ``text``) nests deeper than ``limit`` (by default
    :func:`max_json_depth`). Text with fewer brackets than the limit is not walked."""
    limit = max_json_depth() if limit is None else limit
    brackets = (b"[", b"{") if isinstance(text, bytes) else ("[", "{")
    if text.count(brackets[0]) + text.count(brackets[1]) <= limit:  # type: ignore[arg-type]
        return
    if nested_deeper_than(value, limit):
        raise ValueError(too_deep_message(limit))


def loads_json(text: str | bytes, **options: Any) -> Any:
    """``json.loads``, refusing (ValueError, as for any malformed JSON) text whose strings hold an unpaired
    surrogate, or that nests arrays and objects deeper than :func:`max_json_depth`. Bytes are decoded strictly
    (``json.loads`` would let the UTF-8 bytes of a surrogate through), in the encoding ``json`` detects; then
    only a ``\\u`` escape can make one, so text without one is not walked. ``options`` go to ``json.loads``."""
    if isinstance(text, bytes):
        text = text.decode(json.detect_encoding(text))  # UnicodeDecodeError is a ValueError
    limit = max_json_depth()
    try:
        value = json.loads(text, **options)
    except RecursionError:  # the decoder gives up on very deep nesting this way, not with a ValueError
        raise ValueError(too_deep_message(limit)) from None
    check_json_depth(text, value, limit)
    if "\\u" in text and has_lone_surrogate(value):
        raise ValueError(UNPAIRED_SURROGATE)
    return value


def _nul(scalar: Any) -> bool:
    return isinstance(scalar, str) and "\x00" in scalar


def contains_nul(value: Any) -> bool:
    """Whether a parsed JSON value has a NUL character in any string or object key, at any depth.

    PostgreSQL stores neither text nor ``jsonb`` with a NUL in it, so such a value is refused at the
    edge with a 400 instead of failing in the database.
    """
    return json_any(value, _nul)


def _non_finite(scalar: Any) -> bool:
    return isinstance(scalar, float) and not math.isfinite(scalar)


def has_non_finite(value: Any) -> bool:
    """Whether a parsed JSON value holds a number beyond a double's range (``1e400`` parses as infinity), at any
    depth: JSON cannot write it back."""
    return json_any(value, _non_finite)


class JsonValueField(serializers.JSONField):
    """Any JSON value that can be stored: strings and keys without NUL characters, numbers within a double's
    range."""

    default_error_messages = {
        "nul": "Must not contain NUL characters.",
        "non_finite": "Must not contain a number beyond a double's range (such as 1e400).",
    }

    def to_internal_value(self, data: Any) -> Any:
        if contains_nul(data):
            self.fail("nul")
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError:
            # DRF refuses what JSON cannot write back: for parsed JSON, only a number beyond a double's range.
            if has_non_finite(data):
                self.fail("non_finite")
            raise


class JsonObjectField(JsonValueField):
    default_error_messages = {"invalid": "Must be a JSON object."}

    def to_internal_value(self, data: Any) -> dict:
        if not isinstance(data, dict):
            self.fail("invalid")
        return super().to_internal_value(data)


class HttpUrlField(StrictCharField):
    """An absolute http(s) URL, checked syntactically only (never fetched)."""

    default_error_messages = {"invalid": "Must be an absolute http:// or https:// URL."}

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not is_http_url(value):
            self.fail("invalid")
        return value


def is_http_url(value: str) -> bool:
    """Whether ``value`` is an absolute http(s) URL (syntax only)."""
    try:
        parts = urlsplit(value)
        _ = parts.port  # raises ValueError for a bad port
    except ValueError:
        return False
    return parts.scheme in {"http", "https"} and bool(parts.hostname) and " " not in value


if TYPE_CHECKING:  # the serializer the mixin is combined with, for the type checker only
    _SerializerBase = serializers.Serializer[Any]
else:
    _SerializerBase = object


class RejectUnknownFieldsMixin(_SerializerBase):
    """Refuse fields the endpoint does not know, so a misspelt field is an error, not a no-op."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                # Keyed like any object-level error: a top-level serializer's errors must be a dict.
                raise serializers.ValidationError(
                    {api_settings.NON_FIELD_ERRORS_KEY: [f"Unknown fields: {', '.join(unknown)}"]}
                )
        return super().to_internal_value(data)
