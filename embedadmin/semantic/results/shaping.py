"""Rows from the data source shaped as Cube's ``/v1/load`` result: data, annotation and envelope fields.

Values: numbers become decimal strings (no exponent), times ``YYYY-MM-DDTHH:mm:ss.SSS`` without a zone
(aware values are shown in UTC, as Cube's Postgres driver does), booleans stay booleans, NULL stays null.
A time dimension with a granularity fills ``Cube.td.granularity`` and, unless ``Cube.td`` is also a plain
dimension of the query, ``Cube.td`` (with the finest granularity when several are asked for).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from embedadmin.semantic.modeling.model import CompiledModel
from embedadmin.semantic.modeling.references import PREDEFINED_GRANULARITIES
from embedadmin.semantic.modeling.titles import titleize
from embedadmin.semantic.query.dates import format_local, parse_local, resolve_timezone
from embedadmin.semantic.query.normalized import NormalizedQuery
from embedadmin.semantic.results.meta import member_json
from embedadmin.semantic.sql.builder import CompiledQuery, ResultColumn

_LEVEL = {name: index for index, name in enumerate(PREDEFINED_GRANULARITIES)}


def number_text(value: Any) -> Any:
    """A numeric value as Cube's drivers hand it over: a decimal string."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Decimal):
        return format(value, "f") if value.is_finite() else str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return format(Decimal(repr(value)), "f")
    return value if isinstance(value, str) else str(value)


def time_text(value: Any) -> Any:
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return format_local(value)
    if isinstance(value, date):
        return f"{value.isoformat()}T00:00:00.000"
    if isinstance(value, str):
        try:
            return format_local(parse_local(value, resolve_timezone("UTC")))
        except ValueError:
            return value
    return value


def refresh_time_text(moment: datetime) -> str:
    """A ``lastRefreshTime``: the instant in UTC as ``YYYY-MM-DDTHH:mm:ss.SSSZ`` (a naive time is taken as UTC)."""
    return f"{time_text(moment)}Z"


def plain_text(value: Any) -> Any:
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Decimal):
        return number_text(value)
    if isinstance(value, datetime | date):
        return time_text(value)
    return str(value)


def convert(value: Any, value_type: str) -> Any:
    if value is None:
        return None
    if value_type == "number":
        return number_text(value)
    if value_type == "time":
        return time_text(value)
    if value_type == "boolean" and isinstance(value, bool):
        return value
    if value_type == "boolean" and isinstance(value, int) and value in (0, 1):
        return bool(value)  # a database without a boolean type (MySQL) answers 1 and 0
    return plain_text(value)


def _granularity_level(granularity: str | None) -> int:
    return _LEVEL.get(granularity or "", len(_LEVEL))


def row_keys(compiled: CompiledQuery) -> list[tuple[int, str]]:
    """(column index, row key) pairs, in row order, including the bare ``Cube.td`` keys."""
    query = compiled.query
    keys: list[tuple[int, str]] = []
    finest: dict[str, tuple[int, int]] = {}
    for index, column in enumerate(compiled.columns):
        keys.append((index, column.key))
        if column.role == "timeDimension" and column.member not in query.dimensions:
            level = _granularity_level(column.granularity)
            if column.member not in finest or level < finest[column.member][1]:
                finest[column.member] = (index, level)
    bare = {index: member for member, (index, _) in finest.items()}
    ordered: list[tuple[int, str]] = []
    for index, key in keys:
        ordered.append((index, key))
        if index in bare:
            ordered.append((index, bare[index]))
    return ordered


def shape_rows(compiled: CompiledQuery, rows: Sequence[Sequence[Any]]) -> tuple[list[str], list[list[Any]]]:
    """(row keys, converted rows) for a result whose columns are in the compiled statement's order."""
    keys = row_keys(compiled)
    types = [column.type for column in compiled.columns]
    shaped = []
    for row in rows:
        values = [convert(value, types[i]) for i, value in enumerate(row)]
        shaped.append([values[index] for index, _ in keys])
    return [key for _, key in keys], shaped


def format_data(members: list[str], rows: list[list[Any]], response_format: str | None) -> Any:
    if response_format == "compact":
        return {"members": members, "dataset": rows}
    if response_format == "columnar":
        return {"members": members, "columns": [[row[i] for row in rows] for i in range(len(members))]}
    return [dict(zip(members, row, strict=True)) for row in rows]


def annotation(model: CompiledModel, query: NormalizedQuery) -> dict[str, dict[str, Any]]:
    """Cube's ``annotation``: title, shortTitle, type, format... of every member the query returns."""

    def entry(name: str, *, measure: bool = False) -> dict[str, Any]:
        described = member_json(model, model.members[name])
        body: dict[str, Any] = {
            key: described[key] for key in ("title", "shortTitle", "description") if key in described
        }
        if "type" in described:
            body["type"] = described["type"]
        for key in ("format", "currency", "meta"):
            if key in described:
                body[key] = described[key]
        if measure:
            body["drillMembers"] = described["drillMembers"]
            body["drillMembersGrouped"] = described["drillMembersGrouped"]
        elif "granularities" in described:
            body["granularities"] = described["granularities"]
        return body

    time_dimensions: dict[str, Any] = {}
    for td in query.time_dimensions:
        if not td.granularity:
            continue
        described = entry(td.dimension)
        described.pop("granularities", None)
        time_dimensions[f"{td.dimension}.{td.granularity}"] = {**described, "granularity": granularity_json(model, td)}
        if td.dimension not in query.dimensions:
            time_dimensions[td.dimension] = entry(td.dimension)
            time_dimensions[td.dimension].pop("granularities", None)
    return {
        "measures": {name: entry(name, measure=True) for name in query.measures},
        "dimensions": {name: entry(name) for name in query.dimensions},
        "segments": {name: entry(name) for name in query.segments},
        "timeDimensions": time_dimensions,
    }


def granularity_json(model: CompiledModel, td: Any) -> dict[str, Any]:
    granularity = td.granularity
    if granularity in _LEVEL:
        return {"name": granularity, "title": granularity, "interval": f"1 {granularity}"}
    described = member_json(model, model.members[td.dimension]).get("granularities", [])
    custom = next((g for g in described if g["name"] == granularity), None)
    return dict(custom) if custom else {"name": granularity, "title": titleize(granularity)}


def result_body(
    model: CompiledModel,
    compiled: CompiledQuery,
    rows: Sequence[Sequence[Any]],
    *,
    total: int | None = None,
    last_refresh_time: datetime | None = None,
    db_type: str | None = None,
    data_source: str = "default",
    slow_query: bool = False,
    extra_row_values: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One result object (the regular ``/v1/load`` body, or one item of ``results`` in the multi form)."""
    query = compiled.query
    members, shaped = shape_rows(compiled, rows)
    if extra_row_values:
        members = [*members, *extra_row_values]
        shaped = [[*row, *extra_row_values.values()] for row in shaped]
    body: dict[str, Any] = {
        "query": query.to_json(),
        "data": format_data(members, shaped, query.response_format),
    }
    if last_refresh_time is not None:
        body["lastRefreshTime"] = refresh_time_text(last_refresh_time)
    body["annotation"] = annotation(model, query)
    body["dataSource"] = data_source
    if db_type is not None:
        body["dbType"] = db_type
    body["external"] = False
    body["slowQuery"] = slow_query
    if query.total:
        body["total"] = total
    return body


__all__ = ["ResultColumn", "annotation", "convert", "result_body", "shape_rows"]
