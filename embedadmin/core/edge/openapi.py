"""The OpenAPI pieces every operation shares (the error shape and statuses), for the operations a plain Django view
declares beside its code (:mod:`.declarations`) and for the DRF views' document (``platform/openapi.py``)."""

from __future__ import annotations

from typing import Any

ERROR: dict[str, Any] = {"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]}
ANY_OBJECT: dict[str, Any] = {"type": "object", "additionalProperties": True}
# The statuses any API operation may answer besides its own: the shared error shape (embedadmin/core/errors.py).
ERROR_STATUSES = {
    "400": "Invalid input",
    "401": "Missing or invalid credential",
    "403": "The credential may not do this",
    "404": "Not found (or not the caller's)",
    "405": "Method not allowed",
    "413": "Body too large",
    "415": "Unsupported media type",
    "429": "Too many requests",
    "503": "Temporarily unavailable",
}


def json_content(schema: dict[str, Any], media: str = "application/json") -> dict[str, Any]:
    """The ``content`` of a JSON request or response body."""
    return {media: {"schema": schema}}


def error_responses(media: str = "application/json", schema: dict[str, Any] = ERROR) -> dict[str, Any]:
    """The error answers every operation may give, in the shared error shape."""
    return {
        code: {"description": text, "content": json_content(schema, media)} for code, text in ERROR_STATUSES.items()
    }
