"""The one reader of JSON request bodies: a JSON object, its fields checked against the endpoint's list.

DRF views get ``request.data`` parsed by :class:`embedadmin.core.parsers.JSONBodyParser`; plain Django views (the Core
Data API, the Chat API, the embed endpoints) parse ``request.body`` here with :func:`embedadmin.core.fields.loads_json`.
Either way the same limits hold: the body's size (``DATA_UPLOAD_MAX_MEMORY_SIZE``: Django refuses a larger one with
``RequestDataTooBig``, a 413), the nesting depth (``LIMITS["MAX_JSON_DEPTH"]``), unpaired surrogates, NUL characters,
and, where the endpoint lists its fields, any field it does not know (a misspelt field is an error, not a no-op).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, TypeVar

from django.http import HttpRequest
from rest_framework import serializers
from rest_framework.request import Request

from embedadmin.core.errors import BadRequest, flatten_validation_detail
from embedadmin.core.fields import contains_nul, loads_json

S = TypeVar("S", bound="serializers.Serializer[Any]")

NOT_AN_OBJECT = "The body must be a JSON object"


def unknown_fields_refuse(data: dict[str, Any], fields: Collection[str]) -> None:
    """400 naming the fields of ``data`` not among ``fields``."""
    unknown = sorted(str(name) for name in set(data) - set(fields))
    if unknown:
        raise BadRequest(f"Unknown fields: {', '.join(unknown)}")


def json_object_body(
    request: HttpRequest | Request,
    *,
    fields: Collection[str] | None,
    ignore: Collection[str] = (),
    empty: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The request's body as a JSON object (a new dict), or a 400 saying why it is not one.

    ``fields``: the names the endpoint takes (others are refused), ``None`` where unknown names are ignored on purpose
    (the Core Data API, whose clients are written for Cube, which ignores them); ``ignore``: names dropped before the
    check; ``empty``: what an empty body of a plain view stands for (by default it is refused as not an object)."""
    if isinstance(request, Request):
        data: Any = request.data  # DRF reads an empty body as {}
    elif request.body:
        try:
            data = loads_json(request.body)
        except ValueError as exc:  # UnicodeDecodeError is one too
            raise BadRequest(f"Invalid JSON body: {exc}") from None
    else:
        data = empty
    if not isinstance(data, dict):
        raise BadRequest(NOT_AN_OBJECT)
    body = {name: value for name, value in data.items() if name not in ignore}
    if fields is not None:
        unknown_fields_refuse(body, fields)
    if contains_nul(body):
        raise BadRequest("The body must not contain NUL characters")
    return body


def validated(serializer_class: type[S], request: HttpRequest | Request, *, ignore: Collection[str] = ()) -> S:
    """The body of a plain Django view validated by its serializer (which refuses unknown fields:
    ``RejectUnknownFieldsMixin``); a 400 with every field's message otherwise."""
    serializer = serializer_class(data=json_object_body(request, fields=None, ignore=ignore))
    if not serializer.is_valid():
        raise BadRequest("; ".join(flatten_validation_detail(serializer.errors)))
    return serializer
