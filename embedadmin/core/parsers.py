"""The JSON body parsers of the DRF APIs: JSON as the stock parser reads it, without unpaired surrogates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from embedadmin.core.errors import SCIM_MEDIA_TYPE
from embedadmin.core.fields import (
    UNPAIRED_SURROGATE,
    has_lone_surrogate,
    max_json_depth,
    nested_deeper_than,
    too_deep_message,
)


class JSONBodyParser(JSONParser):
    """``application/json``, refusing (400) a body whose strings or keys hold an unpaired surrogate: such text
    cannot be stored, logged or answered, and an error message that echoed it could not be sent; and a body
    nesting arrays and objects deeper than ``LIMITS["MAX_JSON_DEPTH"]`` (the walks of the checks that follow, and
    of serializers, recurse)."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        limit = max_json_depth()
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(too_deep_message(limit)) from None
        if nested_deeper_than(data, limit):
            raise ParseError(too_deep_message(limit))
        if has_lone_surrogate(data):
            raise ParseError(UNPAIRED_SURROGATE)
        return data


class ScimJSONParser(JSONBodyParser):
    """``application/scim+json``, the media type of SCIM requests (RFC 7644 section 8.1)."""

    media_type = SCIM_MEDIA_TYPE
