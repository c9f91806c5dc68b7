"""What every Platform API view shares: :class:`PlatformView` (a platform token's account, its writes audited,
the caller's deployment or 404), the answers several resources give (:data:`DEPLOYMENT_NOT_FOUND`,
:data:`BODY_INVALID`), and the helpers they read bodies and query parameters and answer lists with. It serves no
route of its own; the resources' modules beside it import it, never the other way round.

The views are thin adapters: each resolves the caller's deployment (another account's is 404), checks the body with
its own serializer (unknown fields, wrong JSON types: 400), calls one service or selector and shapes Cube's camelCase
answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from django.db.models import QuerySet
from rest_framework import serializers

from embedadmin.accounts import selectors as accounts_selectors
from embedadmin.accounts.authentication import IsPlatformCaller, PlatformRequest, PlatformTokenAuthentication
from embedadmin.accounts.models import Deployment
from embedadmin.audit.audited_views import AuditedView
from embedadmin.core.edge.ids import row_id
from embedadmin.core.errors import BadRequest, NotFound
from embedadmin.core.pagination import decode_cursor, encode_cursor, paginate, parse_first
from embedadmin.platform.openapi import error


class PlatformView(AuditedView):
    """A Platform API view: a platform token's account; its writes audited (``audit_resource``)."""

    authentication_classes = [PlatformTokenAuthentication]
    permission_classes = [IsPlatformCaller]

    def deployment(self, request: PlatformRequest, deployment_id: str | int) -> Deployment:
        """The caller's account's deployment ``deployment_id`` (a route's or a body's); 404 for any other."""
        return accounts_selectors.deployment_of(account=request.user.account, deployment_id=deployment_id)


DEPLOYMENT_NOT_FOUND = error("No deployment with this id in the caller's account")
BODY_INVALID = error("Not a JSON object, an unknown field, a NUL character or an invalid value")
# The lists assembled in memory (environments, env variables, regions, model files): a page of them, and Cube's
# deprecated ``data`` with every item.
IN_MEMORY_PAGE = {"data": True}
# The schema of a query parameter naming a row by its id (read by :func:`id_param`).
ID_FILTER = {"type": "integer", "minimum": 1}


Row = TypeVar("Row")


def named_row(lookup: Callable[[int], Row], row_id: int | None, *, field: str, noun: str) -> Row | None:
    """The row that the body's ``field`` names by id, found by ``lookup`` (a selector scoped to the deployment), or
    None when it names none; a 400 naming the field when the deployment has no such row (the path is right, the body
    is not)."""
    if row_id is None:
        return None
    try:
        return lookup(row_id)
    except NotFound:
        raise BadRequest(f"{field}: {noun} {row_id} not found in this deployment") from None


def body_int(body: Mapping[str, Any], name: str, low: int, high: int, default: int) -> int:
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadRequest(f"{name}: must be an integer between {low} and {high}")
    return value


def body_text(body: Mapping[str, Any], name: str, *, max_length: int = 200, required: bool = False) -> str | None:
    if name not in body:
        if required:
            raise BadRequest(f"{name}: this field is required")
        return None
    value = body[name]
    if not isinstance(value, str) or not value.strip() or len(value) > max_length:
        raise BadRequest(f"{name}: must be a non-empty string of at most {max_length} characters")
    return value.strip()


def page_of_list(
    items: list[Any], *, params: Mapping[str, str], key: Callable[[Any], str], serialize: Callable[[Any], Any]
) -> dict[str, Any]:
    """Cursor pagination (``first``, ``after``) over a list assembled in memory and sorted by the unique ``key``;
    with Cube's deprecated ``data``: the whole list."""
    first = parse_first(params.get("first"))
    after = params.get("after")
    ordered = sorted(items, key=key)
    rest = ordered
    if after:
        (last,) = decode_cursor(after, types=(str,))
        rest = [item for item in ordered if key(item) > last]
    page = rest[:first]
    return {
        "items": [serialize(item) for item in page],
        "data": [serialize(item) for item in ordered],
        "pageInfo": {
            "hasNextPage": len(rest) > first,
            "endCursor": encode_cursor([key(page[-1])]) if page else None,
        },
    }


def list_answer(queryset: QuerySet[Any], params: Mapping[str, str], shape: Any) -> dict[str, Any]:
    """``{items, pageInfo}`` with Cube's deprecated ``data`` (the same items) and ``count`` (all matches)."""
    page = paginate(queryset, params=params)
    body = page.as_dict(shape)
    body["data"] = body["items"]
    body["count"] = queryset.count()
    return body


def validated_body(serializer_class: type[serializers.Serializer[Any]], request: PlatformRequest) -> dict[str, Any]:
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def id_param(params: Mapping[str, str], name: str) -> int | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    number = row_id(raw)
    if number is None:
        raise BadRequest(f"{name} must be a positive integer")
    return number
