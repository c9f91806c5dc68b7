"""A Cube filter written as a semantic SQL condition (``written_filter``) means what the Core Data API means by the
filter: the statement's rows equal those of the Cube query carrying the filter, for every operator on every member
type, NULLs and time zones included, on DuckDB and PostgreSQL."""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

import pytest

from embedadmin.semantic.cubesql.written import WRITTEN_OPERATORS, written_filter
from embedadmin.semantic.errors import QueryError
from tests.semantic.conftest import NOW, run_query
from tests.semantic.cubesql_support import data, numeric
from tests.semantic.databases import Executor

# (cube, member, its type, operator, values)
CASES = [
    ("orders", "status", "string", "equals", ["completed", "shipped"]),
    ("orders", "status", "string", "notEquals", ["completed"]),
    ("users", "country", "string", "notEquals", ["DE", "FR"]),  # Eve has no country: kept
    ("users", "country", "string", "equals", ["DE"]),
    ("users", "city", "string", "contains", ["er", "ost"]),
    ("users", "city", "string", "notContains", ["i"]),  # kept: Eve, without a city
    ("users", "city", "string", "startsWith", ["b"]),
    ("users", "city", "string", "endsWith", ["ICH"]),
    ("users", "city", "string", "notStartsWith", ["b"]),
    ("users", "city", "string", "notEndsWith", ["is"]),
    ("users", "country", "string", "in", ["DE", "US"]),
    ("users", "country", "string", "notIn", ["DE"]),
    ("users", "name", "string", "contains", ["%"]),  # a wildcard matched as written: nobody
    ("users", "country", "string", "set", []),
    ("users", "country", "string", "notSet", []),
    ("orders", "amount", "number", "gt", ["50"]),
    ("orders", "amount", "number", "gte", ["50"]),
    ("orders", "amount", "number", "lt", ["20.5"]),
    ("orders", "amount", "number", "lte", ["20"]),
    ("orders", "amount", "number", "equals", ["10", "75"]),
    ("orders", "amount", "number", "notEquals", ["100"]),
    ("orders", "big_basket", "boolean", "equals", ["true"]),
    ("orders", "big_basket", "boolean", "notEquals", ["TRUE"]),
    ("orders", "created_at", "time", "inDateRange", ["2024-01-01", "2024-03-30"]),
    ("orders", "created_at", "time", "inDateRange", ["2024-01-31T23:00:00", "2024-06-01T12:00:00.000"]),
    ("orders", "created_at", "time", "inDateRange", ["last 6 months"]),  # relative, on the clock NOW
    ("orders", "created_at", "time", "notInDateRange", ["2024-02-01", "2024-10-26"]),
    ("orders", "created_at", "time", "beforeDate", ["2024-03-31"]),
    ("orders", "created_at", "time", "afterDate", ["2024-06-01"]),
    ("orders", "created_at", "time", "onTheDate", ["2024-01-31"]),
    ("orders", "created_at", "time", "beforeOrOnDate", ["2024-03-30"]),
    ("orders", "created_at", "time", "afterOrOnDate", ["2024-06-02"]),
]
ZONES = ["UTC", "Europe/Berlin"]


def _count(cube: str) -> str:
    return f"{cube}.count"


def _written(
    column: str, member_type: str, operator: str, values: list[str], *, is_measure: bool = False, zone: str = "UTC"
) -> str:
    """The condition the writer writes for a member labelled by its column, on the clock NOW."""
    return written_filter(
        column=column,
        label=column,
        member_type=member_type,
        is_measure=is_measure,
        operator=operator,
        values=values,
        zone=ZoneInfo(zone),
        now=NOW,
    ).sql


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize(("cube", "member", "member_type", "operator", "values"), CASES)
def test_a_written_filter_returns_the_rows_of_the_cube_query_with_the_filter(
    executor: Executor, zone: str, cube: str, member: str, member_type: str, operator: str, values: list[str]
) -> None:
    # given
    written = _written(member, member_type, operator, values, zone=zone)
    cube_filter: dict[str, Any] = {"member": f"{cube}.{member}", "operator": operator}
    if values:
        cube_filter["values"] = values

    # when
    loaded = run_query(executor, {"measures": [_count(cube)], "filters": [cube_filter], "timezone": zone})
    selected = data(executor, f"SELECT MEASURE(count) FROM {cube} WHERE {written}", timezone=zone)

    # then
    assert numeric(selected) == numeric([[row[_count(cube)]] for row in loaded["data"]])


def test_the_cases_cover_every_operator() -> None:
    assert {case[3] for case in CASES} == set(WRITTEN_OPERATORS)


@pytest.mark.parametrize(("operator", "values"), [("gt", ["100"]), ("equals", ["1", "2"]), ("notEquals", ["1"])])
def test_a_written_filter_on_a_measure_tests_its_aggregate_per_group(
    executor: Executor, operator: str, values: list[str]
) -> None:
    written = _written("count", "number", operator, values, is_measure=True)
    query = {
        "measures": ["orders.count"],
        "dimensions": ["orders.status"],
        "filters": [{"member": "orders.count", "operator": operator, "values": values}],
        "order": {"orders.status": "asc"},
    }

    loaded = run_query(executor, query)
    selected = data(executor, f"SELECT status, MEASURE(count) FROM orders GROUP BY 1 HAVING {written} ORDER BY 1")

    assert numeric(selected) == numeric([[row["orders.status"], row["orders.count"]] for row in loaded["data"]])


@pytest.mark.parametrize(
    ("member_type", "operator", "values", "reason"),
    [
        ("number", "contains", ["3"], "contains applies to text, and age is a number"),
        ("string", "gt", ["5"], "gt compares numbers, and age is text"),
        ("time", "equals", ["2024-01-01"], "equals does not apply to a date"),
        ("time", "inDateRange", ["the day after never"], "its dates could not be read"),
        ("string", "inDateRange", ["2024"], "inDateRange applies to dates only"),
        ("number", "equals", ["ten"], "age is a number"),
        ("boolean", "equals", ["maybe"], "age is true or false"),
        ("string", "between", ["1"], "between is not a filter operator"),
        ("string", "equals", [], "equals needs a value"),
    ],
)
def test_what_a_member_cannot_take_is_refused_with_the_reason(
    member_type: str, operator: str, values: list[str], reason: str
) -> None:
    with pytest.raises(QueryError) as refused:
        _written("age", member_type, operator, values)
    assert refused.value.message == reason
