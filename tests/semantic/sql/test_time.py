"""Granularities (predefined and custom) in the query time zone, across the 2024 Europe/Berlin DST changes."""

from __future__ import annotations

import pytest

from tests.semantic.conftest import run_query
from tests.semantic.databases import Executor

# amount -> order, for reading ungrouped rows (amounts are unique in the dataset)
ORDER_OF_AMOUNT = {100: 1, 50: 2, 75: 3, 20: 4, 300: 5, 10: 6, 60: 7, 5: 8, 40: 9, 15: 10}


def buckets(executor: Executor, granularity: str, timezone: str) -> dict[int, str]:
    """Order number -> the order's ``created_at`` bucket, as the API returns it."""
    body = run_query(
        executor,
        {
            "dimensions": ["orders.amount"],
            "timeDimensions": [{"dimension": "orders.created_at", "granularity": granularity}],
            "timezone": timezone,
            "ungrouped": True,
        },
    )
    key = f"orders.created_at.{granularity}"
    for row in body["data"]:
        assert row[key] == row["orders.created_at"]  # the deprecated bare key mirrors the granular one
    return {ORDER_OF_AMOUNT[int(row["orders.amount"])]: row[key] for row in body["data"]}


def day(text: str) -> str:
    return f"{text}T00:00:00.000"


BERLIN = {
    "second": {1: "2024-01-15T10:00:00.000", 5: "2024-03-31T03:30:00.000", 7: "2024-10-27T02:30:00.000"},
    "minute": {2: "2024-02-01T00:30:00.000", 8: "2025-01-01T00:59:00.000"},
    "hour": {
        4: "2024-03-30T23:00:00.000",
        5: "2024-03-31T03:00:00.000",  # 01:30 UTC is 03:30 CEST: the clocks skipped 02:00-03:00
        6: "2024-10-27T00:00:00.000",  # 22:30 UTC the day before is 00:30 CEST
        7: "2024-10-27T02:00:00.000",  # 01:30 UTC is 02:30 CET, after the clocks went back
    },
    "day": {
        2: day("2024-02-01"),
        4: day("2024-03-30"),
        5: day("2024-03-31"),
        6: day("2024-10-27"),
        8: day("2025-01-01"),
    },
    "week": {
        1: day("2024-01-15"),
        2: day("2024-01-29"),
        4: day("2024-03-25"),
        5: day("2024-03-25"),
        6: day("2024-10-21"),
        8: day("2024-12-30"),
        10: day("2024-05-27"),
    },
    "month": {2: day("2024-02-01"), 5: day("2024-03-01"), 7: day("2024-10-01"), 8: day("2025-01-01")},
    "quarter": {3: day("2024-01-01"), 9: day("2024-04-01"), 6: day("2024-10-01"), 8: day("2025-01-01")},
    "year": {1: day("2024-01-01"), 8: day("2025-01-01")},
    # custom granularities of orders.created_at (the fixed "now" is in 2024)
    "fiscal_year": {5: day("2023-04-01"), 9: day("2024-04-01"), 8: day("2024-04-01")},
    "sunday_week": {
        1: day("2024-01-14"),
        4: day("2024-03-24"),
        5: day("2024-03-31"),
        6: day("2024-10-27"),
        8: day("2024-12-29"),
        10: day("2024-06-02"),
    },
    "half_year": {5: day("2024-01-01"), 6: day("2024-07-01"), 9: day("2024-01-01"), 8: day("2025-01-01")},
}


@pytest.mark.parametrize("granularity", list(BERLIN))
def test_granularities_in_europe_berlin(executor: Executor, granularity: str) -> None:
    found = buckets(executor, granularity, "Europe/Berlin")

    assert {order: found[order] for order in BERLIN[granularity]} == BERLIN[granularity]


def test_the_same_instants_in_utc_and_new_york(executor: Executor) -> None:
    assert buckets(executor, "day", "UTC")[2] == day("2024-01-31")
    assert buckets(executor, "year", "UTC")[8] == day("2024-01-01")
    new_york = buckets(executor, "hour", "America/New_York")
    assert new_york[8] == "2024-12-31T18:00:00.000"  # EST, UTC-5
    assert new_york[9] == "2024-06-01T08:00:00.000"  # EDT, UTC-4


def test_date_range_of_the_short_spring_day_in_berlin(executor: Executor) -> None:
    body = run_query(
        executor,
        {
            "measures": ["orders.count"],
            "timeDimensions": [
                {"dimension": "orders.created_at", "granularity": "hour", "dateRange": ["2024-03-31", "2024-03-31"]}
            ],
            "timezone": "Europe/Berlin",
        },
    )

    # 2024-03-31 in Berlin runs from 2024-03-30T23:00Z to 2024-03-31T22:00Z (23 hours): only order 5.
    assert body["data"] == [
        {
            "orders.created_at.hour": "2024-03-31T03:00:00.000",
            "orders.created_at": "2024-03-31T03:00:00.000",
            "orders.count": "1",
        }
    ]


def test_three_part_dimension_names_become_time_dimensions(executor: Executor) -> None:
    body = run_query(
        executor,
        {
            "measures": ["orders.count"],
            "dimensions": ["orders.created_at.quarter"],
            "filters": [{"member": "orders.created_at", "operator": "beforeDate", "values": ["2024-07-01"]}],
        },
    )

    assert body["query"]["dimensions"] == []
    assert body["query"]["timeDimensions"] == [{"dimension": "orders.created_at", "granularity": "quarter"}]
    assert body["data"] == [
        {"orders.created_at.quarter": day("2024-01-01"), "orders.created_at": day("2024-01-01"), "orders.count": "5"},
        {"orders.created_at.quarter": day("2024-04-01"), "orders.created_at": day("2024-04-01"), "orders.count": "2"},
    ]


def test_finest_granularity_fills_the_bare_key_and_a_plain_dimension_keeps_it(executor: Executor) -> None:
    body = run_query(
        executor,
        {
            "measures": ["orders.count"],
            "timeDimensions": [
                {"dimension": "orders.created_at", "granularity": "year"},
                {"dimension": "orders.created_at", "granularity": "month", "dateRange": ["2024-06-01", "2024-06-30"]},
            ],
        },
    )
    assert body["data"] == [
        {
            "orders.created_at.year": day("2024-01-01"),
            "orders.created_at.month": day("2024-06-01"),
            "orders.created_at": day("2024-06-01"),
            "orders.count": "2",
        }
    ]

    plain = run_query(
        executor,
        {
            "measures": ["orders.count"],
            "dimensions": ["orders.created_at"],
            "timeDimensions": [{"dimension": "orders.created_at", "granularity": "year", "dateRange": "2024-06-01"}],
        },
    )
    assert plain["data"] == [
        {
            "orders.created_at": "2024-06-01T12:00:00.000",
            "orders.created_at.year": day("2024-01-01"),
            "orders.count": "1",
        }
    ]
