"""The JSON body parsers of the DRF APIs: JSON as the stock parser reads it, without unpaired surrogates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from embedadmin.core.errors import SCIM_MEDIA_TYPE
from embedadmin.core.fields import UNPAIRED_SURROGATE, has_lone_surrogate


class JSONBodyParser(JSONParser):
    """``application/json``, refusing (400) a body whose strings or keys hold an unpaired surrogate: such text
    cannot be stored, logged or answered, and an error message that echoed it could not be sent."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        data = super().parse(stream, media_type, parser_context)
        if has_lone_surrogate(data):
            raise ParseError(UNPAIRED_SURROGATE)
        return data


class ScimJSONParser(JSONBodyParser):
    """``application/scim+json``, the media type of SCIM requests (RFC 7644 section 8.1)."""

    media_type = SCIM_MEDIA_TYPE
