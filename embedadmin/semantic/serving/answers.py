"""``/v1/load`` answers kept by a process and given again, byte for byte, for the same request (ADR 0012).

A dashboard asks the same queries again and again. An answer is kept under everything it depends on, so that
giving it again needs no parsing, planning or shaping:

- the request: its deployment, data source, method and raw query string or body;
- the caller: ``QueryContext.identity``, the key of the result cache and of access policies;
- the model: its ``compilerId``;
- the time: the local time in each of the query's time zones, truncated to the finest unit the query could
  name (day; hour, minute or second when its text mentions one), so relative date ranges resolve alike;
- the rows: each result it was made of must still be the latest written for its key (its stamp in the result
  cache, which every process writes) and still fresh by ``refresh_key.every``.

Only an answer whose results were all fresh and read through the cache is kept (not ``no-cache``, not stale).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from django.conf import settings

from embedadmin.core.fields import loads_json
from embedadmin.core.memory import ByteLRU
from embedadmin.semantic.query.dates import format_local, local_now, resolve_timezone, start_of

MAX_ANSWER_BYTES = 256 * 1024
MAX_SHAPES = 10_000

TimeShape = tuple[str, tuple[str, ...]]


class Stamps(Protocol):
    """Where the latest read time of each result is kept (the result cache, :meth:`QueryRunner.stamps`)."""

    def stamps(self, keys: Sequence[str]) -> dict[str, float]: ...


@dataclass(frozen=True)
class ResultUse:
    """One cached result an answer was made of: its key, when it was read, and its refresh interval."""

    key: str
    refreshed_at: float
    every: float


@dataclass(frozen=True)
class _Kept:
    body: bytes
    uses: tuple[ResultUse, ...]


class AnswerMemory:
    """Answers kept by this process, the least recently given dropped first beyond ``max_bytes`` (by default
    ``LIMITS["ANSWER_MEMORY_BYTES"]``); an answer's size is its body's length. What an answer holds beyond its
    body (its key, a few result keys: under a KiB) is bounded by keeping at most one answer per KiB of budget."""

    def __init__(self, *, max_bytes: int | None = None, max_answer_bytes: int = MAX_ANSWER_BYTES) -> None:
        budget = settings.LIMITS["ANSWER_MEMORY_BYTES"] if max_bytes is None else max_bytes
        self.max_answer_bytes = max_answer_bytes
        self._kept: ByteLRU[Hashable, _Kept] = ByteLRU(
            "kept answers", budget, max_entries=max(64, budget // 1024), overhead=0
        )

    @property
    def held_bytes(self) -> int:
        return self._kept.held_bytes

    def get(self, key: Hashable, runner: Stamps) -> bytes | None:
        """The answer kept under ``key`` if every result it was made of is still current."""
        kept = self._kept.peek(key)
        if kept is None or not _current(kept.uses, runner):
            return None
        self._kept.get(key)  # marks it used
        return kept.body

    def keep(self, key: Hashable, body: bytes, uses: tuple[ResultUse, ...]) -> None:
        if len(body) > self.max_answer_bytes:
            return
        self._kept.put(key, _Kept(body, uses), len(body))


def _current(uses: tuple[ResultUse, ...], runner: Stamps) -> bool:
    now = time.time()
    if any(now - use.refreshed_at >= use.every for use in uses):
        return False
    stamps = runner.stamps([use.key for use in uses])
    return all(stamps.get(use.key) == use.refreshed_at for use in uses)


class RequestShapes:
    """What each raw request's relative dates depend on (:func:`time_shape`), remembered by its digest (at most
    ``max_entries``, the least recently used dropped first)."""

    def __init__(self, max_entries: int = MAX_SHAPES) -> None:
        self._shapes: ByteLRU[str, tuple[TimeShape | None]] = ByteLRU(
            "request time shapes", max_entries * 1024, max_entries=max_entries
        )

    def get(self, digest: str, params: Callable[[], dict[str, Any]]) -> TimeShape | None:
        found = self._shapes.get(digest)
        if found is not None:
            return found[0]
        shape = time_shape(params())
        self._shapes.put(digest, (shape,), len(digest) + 100 * (1 + len(shape[1]) if shape else 1))
        return shape


def request_digest(method: str, raw: bytes) -> str:
    """A request's method and raw query string or body, as a key."""
    return hashlib.sha256(method.encode() + b"\n" + raw).hexdigest()


def time_shape(params: dict[str, Any]) -> TimeShape | None:
    """The finest unit a request's query could name (day, or hour, minute, second when it mentions one) and its
    time zones; None when the query cannot be read that way (it is then answered but not kept)."""
    query = params.get("query")
    try:
        items = loads_json(query) if isinstance(query, str) else query
    except ValueError:  # (nesting beyond the limit included): the query answers the error
        return None
    items = items if isinstance(items, list) else [items]
    if not all(isinstance(item, dict) for item in items):
        return None
    text = json.dumps(items).lower()
    unit = next((u for u in ("second", "minute", "hour") if u in text), "day")
    zones = [item.get("timezone", "UTC") for item in items]
    if not all(isinstance(zone, str) for zone in zones):
        return None
    try:
        for zone in zones:
            resolve_timezone(zone)
    except Exception:  # an unknown or malformed time zone: the query answers the error
        return None
    return unit, tuple(sorted(set(zones)))


def time_key(shape: TimeShape, now: datetime | None = None) -> tuple[str, ...]:
    """The current local time in each of the shape's time zones, truncated to its unit: two requests of one
    shape with the same key resolve every relative date alike. Every zone's offset is whole seconds, so a local
    second, minute, hour or day starts on a whole second of Unix time: the key is computed once a second."""
    if now is not None:
        return _time_key(shape, now)
    return _time_key_at(shape, math.floor(time.time()))


@functools.lru_cache(maxsize=1024)
def _time_key_at(shape: TimeShape, second: int) -> tuple[str, ...]:
    return _time_key(shape, datetime.fromtimestamp(second, UTC))


def _time_key(shape: TimeShape, moment: datetime) -> tuple[str, ...]:
    unit, zones = shape
    return (unit, *(format_local(start_of(local_now(moment, resolve_timezone(zone)), unit)) for zone in zones))
