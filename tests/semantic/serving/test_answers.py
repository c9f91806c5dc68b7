"""Kept answers' keys and bounds (``serving/answers.py``): what a kept answer's time depends on, and how much a
process keeps."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from embedadmin.semantic.serving import answers
from embedadmin.semantic.serving.answers import AnswerMemory, ResultUse, time_key, time_shape


class Stamps:
    """A stand-in for the result cache's stamps: the latest read time of each result key."""

    def __init__(self, **stamps: float) -> None:
        self.values = stamps

    def stamps(self, keys):
        return {key: self.values[key] for key in keys if key in self.values}


@pytest.mark.parametrize(
    ("query", "shape"),
    [
        ({"measures": ["orders.count"]}, ("day", ("UTC",))),
        ({"measures": ["orders.count"], "timezone": "Europe/Paris"}, ("day", ("Europe/Paris",))),
        ('{"measures": ["orders.count"], "timeDimensions": [{"granularity": "hour"}]}', ("hour", ("UTC",))),
        ([{"timezone": "Asia/Tokyo"}, {"timezone": "UTC", "x": "last 5 minutes"}], ("minute", ("Asia/Tokyo", "UTC"))),
        ({"timezone": "Not/AZone"}, None),
        ("not json", None),
        ([1, 2], None),
    ],
)
def test_the_time_shape_is_the_finest_unit_named_and_the_zones(query, shape):
    assert time_shape({"query": query}) == shape


def test_the_time_key_moves_at_the_zones_midnight_not_before():
    shape = ("day", ("Asia/Tokyo",))
    before = datetime(2024, 3, 4, 14, 59, 59, tzinfo=UTC)  # 23:59:59 in Tokyo
    after = datetime(2024, 3, 4, 15, 0, 0, tzinfo=UTC)  # midnight there

    assert time_key(shape, before) == time_key(shape, datetime(2024, 3, 3, 15, 0, 0, tzinfo=UTC))
    assert time_key(shape, before) != time_key(shape, after)


def test_the_time_key_follows_the_clock_to_the_second(monkeypatch):
    shape = ("second", ("UTC",))
    clock = [1_700_000_000.2]
    monkeypatch.setattr(answers.time, "time", lambda: clock[0])

    first = time_key(shape)
    clock[0] = 1_700_000_000.9
    same_second = time_key(shape)
    clock[0] = 1_700_000_001.0
    next_second = time_key(shape)

    assert first == same_second
    assert next_second != first
    assert next_second == time_key(shape, datetime.fromtimestamp(1_700_000_001, UTC))


def test_a_kept_answer_is_given_while_its_results_are_the_latest_and_fresh(monkeypatch):
    memory = AnswerMemory()
    monkeypatch.setattr(answers.time, "time", lambda: 1000.0)
    memory.keep("k", b"body", (ResultUse(key="r", refreshed_at=990.0, every=60.0),))

    assert memory.get("k", Stamps(r=990.0)) == b"body"
    assert memory.get("k", Stamps(r=995.0)) is None  # another result was written since
    assert memory.get("k", Stamps()) is None  # the stamp is gone: nothing says the rows are the latest
    monkeypatch.setattr(answers.time, "time", lambda: 1050.0)
    assert memory.get("k", Stamps(r=990.0)) is None  # stale by refresh_key.every


def test_the_memory_keeps_at_most_its_bytes_dropping_the_least_recently_given():
    memory = AnswerMemory(max_bytes=10, max_answer_bytes=6)
    fresh = (ResultUse(key="r", refreshed_at=1e12, every=1e12),)
    stamps = Stamps(r=1e12)

    memory.keep("a", b"aaaa", fresh)
    memory.keep("b", b"bbbb", fresh)
    assert memory.get("a", stamps) == b"aaaa"  # "a" is now the most recently given
    memory.keep("c", b"cccc", fresh)  # 12 bytes: "b" makes room
    memory.keep("huge", b"x" * 7, fresh)  # above max_answer_bytes: never kept

    assert [memory.get(key, stamps) for key in ("a", "b", "c", "huge")] == [b"aaaa", None, b"cccc", None]
