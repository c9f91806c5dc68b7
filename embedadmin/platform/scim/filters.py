"""A SCIM filter (RFC 7644 3.4.2.2), parsed by ``scim2-models``, as a database query.

Each filterable attribute maps to a column and says whether it compares case-sensitively (``caseExact``) and
what its values are; ``eq ne co sw ew pr gt ge lt le``, ``and or not`` and grouping combine them. A filter on any
other attribute is 400 ``invalidFilter``, as the RFC asks of a filter the service does not support.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.db.models import Q
from django.utils.dateparse import parse_datetime
from scim2_models import InvalidFilterException, ScimFilter
from scim2_models.path import AttrPath, Comparison, FilterNode, LogicalExpr, Not, Present, ValuePath

from embedadmin.core.fields import MAX_BIGINT


@dataclass(frozen=True)
class Column:
    """Where a SCIM attribute is stored: ``field`` (a lookup path), its kind, and ``empty``, the stored value that
    means "not present" (``pr``)."""

    field: str
    kind: str  # "text" (case-insensitive), "exact" (case-sensitive text), "bool", "datetime", "id"
    empty: Any = ""


USER_COLUMNS = {
    "username": Column("username", "text"),
    "externalid": Column("scim_profile__external_id", "exact"),
    "displayname": Column("scim_profile__display_name", "text"),
    "emails": Column("email", "text"),
    "emails.value": Column("email", "text"),
    "name.givenname": Column("first_name", "text"),
    "name.familyname": Column("last_name", "text"),
    "active": Column("is_active", "bool", None),
    "id": Column("pk", "id", None),
    "meta.created": Column("date_joined", "datetime", None),
    "meta.lastmodified": Column("scim_profile__updated_at", "datetime", None),
}
GROUP_COLUMNS = {
    "displayname": Column("name", "text"),
    "externalid": Column("external_id", "exact"),
    "id": Column("pk", "id", None),
    "members": Column("internal_members__id", "id", None),
    "members.value": Column("internal_members__id", "id", None),
    "meta.created": Column("created_at", "datetime", None),
    "meta.lastmodified": Column("updated_at", "datetime", None),
}
_TEXT_LOOKUPS = {"eq": "iexact", "co": "icontains", "sw": "istartswith", "ew": "iendswith"}
_EXACT_LOOKUPS = {"eq": "exact", "co": "contains", "sw": "startswith", "ew": "endswith"}
_ORDER_LOOKUPS = {"gt": "gt", "ge": "gte", "lt": "lt", "le": "lte"}
_CORE_URNS = ("urn:ietf:params:scim:schemas:core:2.0:user", "urn:ietf:params:scim:schemas:core:2.0:group")


def filter_query(raw: str, *, model: Any, columns: dict[str, Column]) -> Q:
    """The query of the filter ``raw`` on resources of ``model``; 400 ``invalidFilter`` when it does not parse or
    names an attribute ``columns`` does not map."""
    try:
        node = ScimFilter[model](raw).ast
    except InvalidFilterException:
        raise
    except Exception as exc:  # the grammar's own errors: a filter that does not parse
        raise InvalidFilterException(detail=f"Invalid filter: {exc}") from None
    return _node(node, columns, prefix="")


def _name(attr_path: AttrPath, prefix: str) -> str:
    uri = (attr_path.uri or "").casefold().rstrip(":")
    if uri and uri not in _CORE_URNS:
        raise InvalidFilterException(detail=f"Filtering on {attr_path.uri} attributes is not supported")
    name = attr_path.attr if not attr_path.sub_attr else f"{attr_path.attr}.{attr_path.sub_attr}"
    return (f"{prefix}.{name}" if prefix else name).casefold()


def _column(attr_path: AttrPath, columns: dict[str, Column], prefix: str) -> tuple[str, Column]:
    name = _name(attr_path, prefix)
    column = columns.get(name)
    if column is None:
        raise InvalidFilterException(detail=f"Filtering on {name!r} is not supported")
    return name, column


def _node(node: FilterNode, columns: dict[str, Column], prefix: str) -> Q:
    if isinstance(node, LogicalExpr):
        queries = [_node(term, columns, prefix) for term in node.terms]
        combined = queries[0]
        for query in queries[1:]:
            combined = (combined & query) if node.op.value == "and" else (combined | query)
        return combined
    if isinstance(node, Not):
        return ~_node(node.expr, columns, prefix)
    if isinstance(node, Present):
        _, column = _column(node.attr_path, columns, prefix)
        if column.kind == "bool" or (column.kind == "id" and column.field == "pk"):
            return Q(pk__isnull=False)
        present = Q(**{f"{column.field}__isnull": False})
        return present & ~Q(**{column.field: ""}) if column.kind in ("text", "exact") else present
    if isinstance(node, ValuePath):
        if node.sub_attr:
            raise InvalidFilterException(detail="A sub-attribute after a value filter is not supported in filters")
        return _node(node.val_filter, columns, _name(node.attr_path, prefix))
    if isinstance(node, Comparison):
        return _comparison(node, columns, prefix)
    raise InvalidFilterException(detail="Unsupported filter expression")


def _comparison(node: Comparison, columns: dict[str, Column], prefix: str) -> Q:
    name, column = _column(node.attr_path, columns, prefix)
    op = node.op.value.casefold()
    value = _value(name, column, node.value)
    if column.kind in ("text", "exact"):
        lookups = _TEXT_LOOKUPS if column.kind == "text" else _EXACT_LOOKUPS
        if op in lookups:
            return Q(**{f"{column.field}__{lookups[op]}": value})
        if op == "ne":
            return ~Q(**{f"{column.field}__{lookups['eq']}": value})
    elif column.kind == "id" and op in ("eq", "ne"):
        # An id that is no number is no resource's: eq matches nothing (-1 is no row's id), ne everything.
        query = Q(**{column.field: -1 if value is None else value})
        return query if op == "eq" else ~query
    elif op in ("eq", "ne"):
        query = Q(**{column.field: value}) if value is not None else Q(**{f"{column.field}__isnull": True})
        return query if op == "eq" else ~query
    if column.kind == "id" and op in _ORDER_LOOKUPS and value is None:
        raise InvalidFilterException(detail=f'{name!r} is ordered by number: compare it with a decimal id such as "42"')
    if op in _ORDER_LOOKUPS and column.kind in ("text", "exact", "datetime", "id"):
        return Q(**{f"{column.field}__{_ORDER_LOOKUPS[op]}": value})
    raise InvalidFilterException(detail=f"The operator {op!r} does not apply to {name!r}")


def _value(name: str, column: Column, value: Any) -> Any:
    if column.kind in ("text", "exact"):
        if not isinstance(value, str):
            raise InvalidFilterException(detail=f"{name!r} compares with a string")
        return value
    if column.kind == "bool":
        if isinstance(value, str) and value.casefold() in ("true", "false"):
            return value.casefold() == "true"
        if not isinstance(value, bool):
            raise InvalidFilterException(detail=f"{name!r} compares with true or false")
        return value
    if column.kind == "datetime":
        parsed = parse_datetime(value) if isinstance(value, str) else value
        if not isinstance(parsed, dt.datetime):
            raise InvalidFilterException(detail=f"{name!r} compares with a date-time such as 2024-01-01T00:00:00Z")
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
    return _id_number(value)


def _id_number(value: Any) -> int | None:
    """An id's value as a number for the database: a decimal integer (sign and leading zeros allowed), clamped to
    ``-1 .. MAX_BIGINT + 1``, or ``None`` when it is no number (another string, ``null``).

    Every id we store lies in ``0 .. MAX_BIGINT``, and for those the clamped number compares (``eq gt ge lt le``)
    as the written one does: ``-1`` is below all of them, ``MAX_BIGINT + 1`` above all of them (Django answers a
    bound beyond an integer column's range as no row or every row, without asking the database). The digits are
    counted before ``int()``, which refuses more than 4,300 digits with a ValueError (a 500)."""
    text = value if isinstance(value, str) else ""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not (digits.isascii() and digits.isdigit()):
        return None
    significant = digits.lstrip("0")
    number = int(significant or "0") if len(significant) <= 19 else MAX_BIGINT + 1
    if text.startswith("-"):
        number = -number
    return max(-1, min(number, MAX_BIGINT + 1))
