"""Keyset (cursor) pagination: ``first`` and ``after`` in, ``items`` and ``pageInfo`` out.

The cursor is the ordering key of the last item returned, base64-encoded JSON. Keyset pages stay
stable while rows are inserted or deleted, and each page is one indexed range scan, not an OFFSET: the
condition is a row-value comparison, which PostgreSQL turns into an index condition.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import F, QuerySet
from django.db.models.fields.tuple_lookups import Tuple, TupleGreaterThan, TupleLessThan

from embedadmin.core.errors import BadRequest
from embedadmin.core.fields import MAX_BIGINT, loads_json

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


@dataclass(frozen=True)
class Page:
    items: list[Any]
    has_next_page: bool
    end_cursor: str | None

    def as_dict(self, serialize: Callable[[Any], dict]) -> dict:
        return {
            "items": [serialize(item) for item in self.items],
            "pageInfo": {"hasNextPage": self.has_next_page, "endCursor": self.end_cursor},
        }


def parse_first(raw: str | None, *, default: int = DEFAULT_PAGE_SIZE) -> int:
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"first must be an integer between 1 and {MAX_PAGE_SIZE}") from None
    if not 1 <= value <= MAX_PAGE_SIZE:
        raise BadRequest(f"first must be an integer between 1 and {MAX_PAGE_SIZE}")
    return value


def encode_cursor(values: Sequence[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(values), separators=(",", ":")).encode()).decode().rstrip("=")


def _cursor_value_ok(value: Any, expected: type) -> bool:
    """A decoded cursor value must have the type of its ordering field and be one the database can
    compare with (a client can hand-craft a cursor, so a NUL in a string or an integer beyond 64 bits must
    not reach the database)."""
    if isinstance(value, bool) or not isinstance(value, expected):
        return False
    if isinstance(value, int):
        return -MAX_BIGINT - 1 <= value <= MAX_BIGINT
    return not (isinstance(value, str) and "\x00" in value)


def decode_cursor(cursor: str, *, types: Sequence[type]) -> list[Any]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        values = loads_json(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, binascii.Error, RecursionError):
        raise BadRequest("after is not a valid cursor") from None
    if (
        not isinstance(values, list)
        or len(values) != len(types)
        or not all(_cursor_value_ok(v, t) for v, t in zip(values, types, strict=True))
    ):
        raise BadRequest("after is not a valid cursor")
    return values


def paginate(
    queryset: QuerySet,
    *,
    params: Mapping[str, str],
    order: Sequence[str] = ("id",),
    types: Sequence[type] = (int,),
    descending: bool = False,
) -> Page:
    """Return one page of ``queryset`` ordered by ``order`` (the last field must be unique)."""
    first = parse_first(params.get("first"))
    after = params.get("after")
    qs = queryset.order_by(*[f"-{f}" if descending else f for f in order])
    if after:
        values = decode_cursor(after, types=types)
        # A row-value comparison, (a, b) > (x, y): PostgreSQL seeks an index on the ordering key with it, where
        # the equivalent a > x OR (a = x AND b > y) reads every earlier row (Django writes that on SQLite).
        beyond = TupleLessThan if descending else TupleGreaterThan
        qs = qs.filter(beyond(Tuple(*(F(field) for field in order)), tuple(values)))
    rows = list(qs[: first + 1])
    has_next = len(rows) > first
    rows = rows[:first]
    end_cursor = encode_cursor([getattr(rows[-1], f) for f in order]) if rows else None
    return Page(items=rows, has_next_page=has_next, end_cursor=end_cursor)
