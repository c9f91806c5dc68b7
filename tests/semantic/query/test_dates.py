"""Relative and absolute date ranges, time zones, and their conversion to UTC bounds."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from embedadmin.semantic import QueryError
from embedadmin.semantic.query.dates import (
    DATE_RANGE_PRESETS,
    date_range_presets,
    local_to_utc,
    resolve_date_range,
    resolve_timezone,
)

# Monday 2023-07-31 10:30 UTC (the reference's example day)
NOW = datetime(2023, 7, 31, 10, 30, tzinfo=UTC)
UTC_ZONE = resolve_timezone("UTC")

RELATIVE = [
    ("today", ("2023-07-31T00:00:00.000", "2023-07-31T23:59:59.999")),
    ("yesterday", ("2023-07-30T00:00:00.000", "2023-07-30T23:59:59.999")),
    ("tomorrow", ("2023-08-01T00:00:00.000", "2023-08-01T23:59:59.999")),
    ("this week", ("2023-07-31T00:00:00.000", "2023-08-06T23:59:59.999")),
    ("last week", ("2023-07-24T00:00:00.000", "2023-07-30T23:59:59.999")),
    ("next week", ("2023-08-07T00:00:00.000", "2023-08-13T23:59:59.999")),
    ("this month", ("2023-07-01T00:00:00.000", "2023-07-31T23:59:59.999")),
    ("last month", ("2023-06-01T00:00:00.000", "2023-06-30T23:59:59.999")),
    ("next month", ("2023-08-01T00:00:00.000", "2023-08-31T23:59:59.999")),
    ("this quarter", ("2023-07-01T00:00:00.000", "2023-09-30T23:59:59.999")),
    ("last quarter", ("2023-04-01T00:00:00.000", "2023-06-30T23:59:59.999")),
    ("next quarter", ("2023-10-01T00:00:00.000", "2023-12-31T23:59:59.999")),
    ("this year", ("2023-01-01T00:00:00.000", "2023-12-31T23:59:59.999")),
    ("last year", ("2022-01-01T00:00:00.000", "2022-12-31T23:59:59.999")),
    ("next year", ("2024-01-01T00:00:00.000", "2024-12-31T23:59:59.999")),
    ("this day", ("2023-07-31T00:00:00.000", "2023-07-31T23:59:59.999")),
    ("this hour", ("2023-07-31T10:00:00.000", "2023-07-31T10:59:59.999")),
    ("last minute", ("2023-07-31T10:29:00.000", "2023-07-31T10:29:59.999")),
    ("next second", ("2023-07-31T10:30:01.000", "2023-07-31T10:30:01.999")),
    ("last 7 days", ("2023-07-24T00:00:00.000", "2023-07-30T23:59:59.999")),
    ("last 2 weeks", ("2023-07-17T00:00:00.000", "2023-07-30T23:59:59.999")),
    ("last 3 months", ("2023-04-01T00:00:00.000", "2023-06-30T23:59:59.999")),
    ("last 2 quarters", ("2023-01-01T00:00:00.000", "2023-06-30T23:59:59.999")),
    ("last 2 years", ("2021-01-01T00:00:00.000", "2022-12-31T23:59:59.999")),
    ("next 3 days", ("2023-08-01T00:00:00.000", "2023-08-03T23:59:59.999")),
    ("next 2 months", ("2023-08-01T00:00:00.000", "2023-09-30T23:59:59.999")),
    ("last 6 hours", ("2023-07-31T04:00:00.000", "2023-07-31T09:59:59.999")),
    ("Last 7 Days", ("2023-07-24T00:00:00.000", "2023-07-30T23:59:59.999")),
    ("from 7 days ago to now", ("2023-07-24T00:00:00.000", "2023-07-31T23:59:59.999")),
    ("from 2 days ago to today", ("2023-07-29T00:00:00.000", "2023-07-31T23:59:59.999")),
    ("from yesterday to tomorrow", ("2023-07-30T00:00:00.000", "2023-08-01T23:59:59.999")),
    ("from 2023-01-01 to 2023-03-31", ("2023-01-01T00:00:00.000", "2023-03-31T23:59:59.999")),
    ("from 3 hours ago to now", ("2023-07-31T07:00:00.000", "2023-07-31T10:59:59.999")),
    ("from now to 2 weeks from now", ("2023-07-31T00:00:00.000", "2023-08-14T23:59:59.999")),
    ("from today to in 3 days", ("2023-07-31T00:00:00.000", "2023-08-03T23:59:59.999")),
    ("3 days ago", ("2023-07-28T00:00:00.000", "2023-07-28T23:59:59.999")),
    ("2023-05-04", ("2023-05-04T00:00:00.000", "2023-05-04T23:59:59.999")),
]


@pytest.mark.parametrize(("phrase", "expected"), RELATIVE)
def test_relative_date_ranges(phrase: str, expected: tuple[str, str]) -> None:
    assert resolve_date_range(phrase, UTC_ZONE, NOW) == expected


def test_relative_ranges_start_from_now_in_the_query_time_zone() -> None:
    late_evening = datetime(2023, 7, 31, 23, 30, tzinfo=UTC)  # already August 1st in Berlin

    assert resolve_date_range("today", resolve_timezone("Europe/Berlin"), late_evening) == (
        "2023-08-01T00:00:00.000",
        "2023-08-01T23:59:59.999",
    )
    assert resolve_date_range("today", resolve_timezone("America/Los_Angeles"), late_evening) == (
        "2023-07-31T00:00:00.000",
        "2023-07-31T23:59:59.999",
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (["2024-01-01", "2024-01-31"], ("2024-01-01T00:00:00.000", "2024-01-31T23:59:59.999")),
        (["2024-01-01"], ("2024-01-01T00:00:00.000", "2024-01-01T23:59:59.999")),
        (["2024-01-01T10:00:00", "2024-01-01T12:30"], ("2024-01-01T10:00:00.000", "2024-01-01T12:30:00.000")),
        (["2024-01-01T10:00:00.123456"], ("2024-01-01T10:00:00.123", "2024-01-01T10:00:00.123")),
        (
            ["2024-01-01T00:00:00.000Z", "2024-01-01 12:00:00+02:00"],
            ("2024-01-01T01:00:00.000", "2024-01-01T11:00:00.000"),
        ),
    ],
)
def test_absolute_ranges_are_padded_local_timestamps(value: list[str], expected: tuple[str, str]) -> None:
    # Timestamps with a zone are shown in the query time zone (here Europe/Berlin, UTC+1 in January).
    assert resolve_date_range(value, resolve_timezone("Europe/Berlin"), NOW) == expected


@pytest.mark.parametrize("value", ["the day after", "from x to y", "2024-13-01", ["2024-01-01", "nope"], [], 5])
def test_unreadable_ranges_are_query_errors(value: object) -> None:
    with pytest.raises(QueryError):
        resolve_date_range(value, UTC_ZONE, NOW)


@pytest.mark.parametrize(
    ("local", "zone", "utc"),
    [
        ("2024-03-31T00:00:00.000", "Europe/Berlin", datetime(2024, 3, 30, 23, 0, tzinfo=UTC)),
        ("2024-03-31T23:59:59.999", "Europe/Berlin", datetime(2024, 3, 31, 21, 59, 59, 999000, tzinfo=UTC)),
        ("2024-10-27T23:59:59.999", "Europe/Berlin", datetime(2024, 10, 27, 22, 59, 59, 999000, tzinfo=UTC)),
        ("2024-03-10T00:00:00.000", "America/New_York", datetime(2024, 3, 10, 5, 0, tzinfo=UTC)),
        ("2024-03-10T23:59:59.999", "America/New_York", datetime(2024, 3, 11, 3, 59, 59, 999000, tzinfo=UTC)),
        ("2024-11-03T23:59:59.999", "America/New_York", datetime(2024, 11, 4, 4, 59, 59, 999000, tzinfo=UTC)),
    ],
)
def test_local_bounds_convert_to_utc_across_dst(local: str, zone: str, utc: datetime) -> None:
    assert local_to_utc(local, resolve_timezone(zone)) == utc


@pytest.mark.parametrize(
    ("name", "canonical"), [("UTC", "UTC"), ("europe/berlin", "Europe/Berlin"), ("Asia/Tokyo", "Asia/Tokyo")]
)
def test_time_zone_names_are_canonicalized(name: str, canonical: str) -> None:
    assert resolve_timezone(name).key == canonical


@pytest.mark.parametrize("name", ["Mars/Olympus", "", "../../etc/passwd", "UTC'; --", 5])
def test_invalid_time_zones_are_refused_with_cubes_message(name: object) -> None:
    with pytest.raises(QueryError, match=r'^"timezone" must be a valid IANA time zone, got "'):
        resolve_timezone(name)


@pytest.mark.parametrize(("phrase", "label"), DATE_RANGE_PRESETS)
def test_every_date_range_a_person_is_offered_is_one_this_parser_reads(phrase, label):
    start, end = resolve_date_range(phrase, UTC_ZONE, NOW)

    assert start <= end
    assert label == phrase[:1].upper() + phrase[1:]
    assert {"value": phrase, "label": label} in date_range_presets()
