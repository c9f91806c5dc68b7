"""Cube filters written as semantic SQL conditions: the inverse of :mod:`~embedadmin.semantic.cubesql.filters`.

A client that holds a filter as Cube writes it (``member operator values``: a dashboard's filter, say) and asks
through semantic SQL writes it with :func:`written_filter`, so the statement stays whole (re-run alone, it gives the
same rows) and means what the Core Data API means by that filter: the translator reads the condition back into Cube
filters, which are normalized and compiled as every filter is. ``tests/semantic/cubesql/test_written_filters.py``
checks each operator on each member type both ways, on DuckDB and PostgreSQL: the statement's rows equal those of
the Cube query with the filter.

What a member cannot take is refused with the reason, in words a person reads (``contains`` on a number, a date
that does not read, ``gt`` on text): the caller leaves that filter out and says why.

Negative operators keep the rows without a value (``notEquals``, ``notContains``), as Cube's do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from embedadmin.semantic.errors import QueryError
from embedadmin.semantic.modeling.model import DATE_OPERATORS, FILTER_OPERATORS
from embedadmin.semantic.query.dates import resolve_date_range
from embedadmin.semantic.query.values import NUMBER_TEXT

# The operators a filter is written with: every one that tests a member's value (``measureFilter`` applies a
# measure's own filters and has no value to write).
WRITTEN_OPERATORS = tuple(operator for operator in FILTER_OPERATORS if operator != "measureFilter")
COMPARISONS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
PATTERNS = {
    "contains": ("%", "%"),
    "notContains": ("%", "%"),
    "startsWith": ("", "%"),
    "notStartsWith": ("", "%"),
    "endsWith": ("%", ""),
    "notEndsWith": ("%", ""),
}
NEGATIVE = frozenset({"notEquals", "notIn", "notContains", "notStartsWith", "notEndsWith"})
DAY_START = "T00:00:00.000"
DAY_END = "T23:59:59.999"


@dataclass(frozen=True)
class WrittenFilter:
    """A filter as a semantic SQL condition (of ``WHERE``, or of ``HAVING`` for a measure), and its values as the
    condition reads them (a relative date range resolved: ``2024-07-01``, ``2025-06-30``)."""

    sql: str
    values: tuple[str, ...]


def sql_string(value: str) -> str:
    """``value`` as a semantic SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def written_filter(
    *,
    column: str,
    label: str,
    member_type: str,
    is_measure: bool,
    operator: str,
    values: Sequence[str],
    zone: ZoneInfo,
    now: datetime,
) -> WrittenFilter:
    """The condition ``column operator values`` means for a member of ``member_type`` (``is_measure``: tested on its
    aggregate, ``MEASURE(column)`` in ``HAVING``); raises QueryError naming ``label`` when the member cannot take it."""
    values = tuple(values)
    if operator not in WRITTEN_OPERATORS:
        raise QueryError(f"{operator} is not a filter operator")
    if not values and operator not in ("set", "notSet"):
        raise QueryError(f"{operator} needs a value")
    if is_measure:
        return _measure_condition(f"MEASURE({column})", operator, values, label)
    if operator in ("set", "notSet"):
        return WrittenFilter(f"{column} IS {'NOT ' if operator == 'set' else ''}NULL", ())
    if member_type == "time":
        if operator not in DATE_OPERATORS:
            raise QueryError(f"{operator} does not apply to a date")
        return _date_condition(column, operator, values, zone=zone, now=now)
    if operator in DATE_OPERATORS:
        raise QueryError(f"{operator} applies to dates only")
    if member_type == "string":
        if operator in COMPARISONS:
            raise QueryError(f"{operator} compares numbers, and {label} is text")
        if operator in PATTERNS:
            return _pattern_condition(column, operator, values)
        return _membership(column, operator, [sql_string(v) for v in values], values)
    if member_type == "number":
        if operator in PATTERNS:
            raise QueryError(f"{operator} applies to text, and {label} is a number")
        numbers = tuple(v.strip() for v in values)
        if not all(NUMBER_TEXT.match(v) for v in numbers):
            raise QueryError(f"{label} is a number")
        if operator in COMPARISONS:
            return WrittenFilter(f"{column} {COMPARISONS[operator]} {numbers[0]}", numbers[:1])
        return _membership(column, operator, list(numbers), numbers)
    if member_type == "boolean":
        if operator not in ("equals", "notEquals") or not all(v.lower() in ("true", "false") for v in values):
            raise QueryError(f"{label} is true or false")
        literals = sorted({v.upper() for v in values})
        if operator == "equals":
            test = " OR ".join(f"{column} = {v}" for v in literals)
        else:  # IS NOT keeps the rows without a value, as Cube's notEquals does
            test = " AND ".join(f"{column} IS NOT {v}" for v in literals)
        return WrittenFilter(f"({test})" if len(literals) > 1 else test, tuple(v.lower() for v in literals))
    raise QueryError(f"{label} has a type ({member_type or 'unknown'}) filters do not apply to")


def _membership(column: str, operator: str, literals: list[str], values: tuple[str, ...]) -> WrittenFilter:
    negated = operator in NEGATIVE  # notEquals, notIn
    if len(literals) == 1:
        test = f"{column} {'<>' if negated else '='} {literals[0]}"
    else:
        test = f"{column} {'NOT IN' if negated else 'IN'} ({', '.join(literals)})"
    if negated:  # Cube's notEquals keeps the rows without a value; SQL's <> does not
        test = f"({test} OR {column} IS NULL)"
    return WrittenFilter(test, values)


def _like_text(value: str) -> str:
    """``value`` with LIKE's wildcards and escape character escaped: matched as written."""
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _pattern_condition(column: str, operator: str, values: tuple[str, ...]) -> WrittenFilter:
    before, after = PATTERNS[operator]
    patterns = [sql_string(f"{before}{_like_text(v)}{after}") for v in values]
    if operator in NEGATIVE:  # keeps the rows without a value, as Cube's notContains does
        tests = " AND ".join(f"{column} NOT ILIKE {p}" for p in patterns)
        test = f"({tests} OR {column} IS NULL)"
    else:
        tests = " OR ".join(f"{column} ILIKE {p}" for p in patterns)
        test = f"({tests})" if len(patterns) > 1 else tests
    return WrittenFilter(test, values)


def _measure_condition(column: str, operator: str, values: tuple[str, ...], label: str) -> WrittenFilter:
    """A filter on a measure, tested on its aggregated value (``HAVING``), as Cube applies a measure filter."""
    numbers = tuple(v.strip() for v in values)
    if operator not in (*COMPARISONS, "equals", "notEquals"):
        raise QueryError(f"{operator} does not apply to a measure")
    if not all(NUMBER_TEXT.match(v) for v in numbers):
        raise QueryError(f"{label} is a number")
    if operator in COMPARISONS:
        return WrittenFilter(f"{column} {COMPARISONS[operator]} {numbers[0]}", numbers[:1])
    if operator == "equals":
        test = " OR ".join(f"{column} = {v}" for v in numbers)
        return WrittenFilter(f"({test})" if len(numbers) > 1 else test, numbers)
    return WrittenFilter(" AND ".join(f"{column} <> {v}" for v in numbers), numbers)


def _date_condition(
    column: str, operator: str, values: tuple[str, ...], *, zone: ZoneInfo, now: datetime
) -> WrittenFilter:
    """A date filter as local bounds, resolved in ``zone`` the way the Core Data API resolves a ``dateRange``: whole
    days as ``DATE`` literals, the end exclusive."""
    ranged = operator in ("inDateRange", "notInDateRange")  # the others take one date (or instant)
    if (ranged and len(values) > 2) or (not ranged and len(values) != 1):
        raise QueryError(f"{operator} takes {'one or two dates' if ranged else 'one date'}")
    try:
        start, end = resolve_date_range(values[0] if len(values) == 1 else list(values), zone, now)
    except QueryError:
        raise QueryError("its dates could not be read") from None
    if start > end:
        raise QueryError("its range ends before it starts")
    try:
        lower, upper = _start_literal(start), _end_literal(end)  # column >= lower, column < upper
    except OverflowError:  # a range ending on the last day of the year 9999
        raise QueryError("its dates could not be read") from None
    if operator == "inDateRange":
        return WrittenFilter(f"{column} >= {lower} AND {column} < {upper}", (_shown(start), _shown(end)))
    if operator == "onTheDate":
        return WrittenFilter(f"{column} >= {lower} AND {column} < {upper}", (_shown(start),))
    if operator == "notInDateRange":
        return WrittenFilter(f"({column} < {lower} OR {column} >= {upper})", (_shown(start), _shown(end)))
    if operator == "beforeDate":
        return WrittenFilter(f"{column} < {lower}", (_shown(start),))
    if operator == "beforeOrOnDate":
        return WrittenFilter(f"{column} < {upper}", (_shown(end),))
    if operator == "afterOrOnDate":
        return WrittenFilter(f"{column} >= {lower}", (_shown(start),))
    return WrittenFilter(f"{column} >= {upper}", (_shown(end),))  # afterDate: after the day (or instant) given


def _start_literal(local: str) -> str:
    """A range's first instant as a semantic SQL literal: ``DATE '2025-01-01'`` for a day's start."""
    if local.endswith(DAY_START):
        return f"DATE '{local[:10]}'"
    return f"TIMESTAMP '{local.replace('T', ' ')}'"


def _end_literal(local: str) -> str:
    """The first instant after a range's last one (``23:59:59.999`` of a day: the next day)."""
    if local.endswith(DAY_END):
        return f"DATE '{(date.fromisoformat(local[:10]) + timedelta(days=1)).isoformat()}'"
    after = datetime.fromisoformat(local) + timedelta(milliseconds=1)
    return f"TIMESTAMP '{after.isoformat(sep=' ', timespec='milliseconds')}'"


def _shown(local: str) -> str:
    """A bound in words: the day alone when it is a whole day's start or end."""
    if local.endswith((DAY_START, DAY_END)):
        return local[:10]
    return local.replace("T", " ")[:23]
