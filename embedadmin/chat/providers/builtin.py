"""The built-in provider: an analyst that answers a question about the data offline and deterministically, or
says what it did not understand (``analyst/``).

It calls ``serviceMeta`` to learn the cubes and members this user may see, reads the question into one Cube
query (every word placed: members, values looked up in the data, dates, grains, rankings, comparisons), adds the
filters of the dashboard it is asked from (``analyst/context.py``), runs its semantic SQL with ``serviceSqlApi``
and states the numbers and what was computed. A question it cannot place
fully, or that needs more than one query or a calculation the model does not have, is declined with the reason.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from embedadmin.chat.member_search import value_key
from embedadmin.chat.providers.analyst.answer import capabilities, write_answer
from embedadmin.chat.providers.analyst.context import with_dashboard_filters
from embedadmin.chat.providers.analyst.formatting import ValueFormatter
from embedadmin.chat.providers.analyst.intent import Decline, Intent
from embedadmin.chat.providers.analyst.model_phrases import Cube, cubes_of
from embedadmin.chat.providers.analyst.reading import read
from embedadmin.chat.providers.analyst.understand import understand
from embedadmin.chat.providers.base import (
    ContentDelta,
    DateCoverage,
    ProviderEvent,
    ProviderRequest,
    Suggestions,
    ThinkingDelta,
    ValueLookup,
)

ANSWER_PARTS = 3
FOLLOW_UP_DEPTH = 3  # earlier questions read to understand a follow-up


class BuiltinProvider:
    """The ``builtin`` agent: ``serviceMeta``, then ``serviceSqlApi``, then an answer that states the numbers."""

    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        return analyst_stream(request)


async def analyst_stream(request: ProviderRequest, *, now: datetime | None = None) -> AsyncIterator[ProviderEvent]:
    """The built-in analyst's answer to ``request``: thinking, ``serviceMeta``, ``serviceSqlApi``, content."""
    question = request.question
    yield ThinkingDelta(f"Searching the data model for: {question}")
    meta = json.loads(await request.call_tool("serviceMeta", {"searchQuery": question}))
    text, offered = await _answer(request, meta, now or datetime.now(UTC))
    for piece in chunks(text, ANSWER_PARTS):
        yield ContentDelta(piece)
    if offered:
        yield Suggestions(offered)


async def _answer(request: ProviderRequest, meta: dict[str, Any], now: datetime) -> tuple[str, tuple[str, ...]]:
    """The answer's text, and for a decline with a way forward the questions offered instead (else none)."""
    if "error" in meta:
        return f"I could not search the data model: {meta['error']}", ()
    whole = await _whole_model(request)
    cubes = _ordered(meta, whole)
    if not cubes:
        return "I found nothing in the data model that matches your question.", ()
    zone = ZoneInfo(request.timezone)
    lookup = _remembered(request.lookup_values or _no_values)
    dates_set = _remembered_dates(request.dates_always_set)
    previous = None
    if _is_follow_up(request.question, zone, now):  # only a follow-up reads the thread's earlier questions
        previous = await _previous_intent(request, cubes, whole, lookup, dates_set, zone, now)
    outcome = await understand(
        request.question, cubes, lookup, zone=zone, now=now, previous=previous, dates_set=dates_set
    )
    if isinstance(outcome, Decline):
        if outcome.suggestions:
            offered = "\n".join(f"- {q}" for q in outcome.suggestions)
            return f"{outcome.reason}\n\nDid you mean:\n{offered}", outcome.suggestions
        return f"{outcome.reason} {capabilities(cubes)}", ()
    if request.context_filters:  # asked from a dashboard: its filters narrow the answer as they narrow its tiles
        outcome = with_dashboard_filters(outcome, request.context_filters, zone=zone, now=now)
    arguments = {
        "sqlQuery": outcome.sql(),
        "queryTitle": outcome.title(),
        "description": outcome.computed(),
        "userRequest": request.question,
        "timezone": outcome.timezone,
    }
    result = json.loads(await request.call_tool("serviceSqlApi", arguments))
    if "error" in result:
        return f"I could not run the query ({result['error']}). {capabilities(cubes)}", ()
    return write_answer(outcome, result, formatter=ValueFormatter(locale=request.locale, timezone=request.timezone)), ()


async def _previous_intent(
    request: ProviderRequest,
    cubes: Sequence[Cube],
    whole: list[Cube] | None,
    lookup: ValueLookup,
    dates_set: DateCoverage | None,
    zone: ZoneInfo,
    now: datetime,
) -> Intent | None:
    """What the thread's last questions asked, read again (each in the light of the ones before it, against the
    cubes its own search found, as when it was asked)."""
    history = request.history
    questions = [m["content"] for m in history if m.get("role") == "user" and isinstance(m.get("content"), str)]
    window = questions[-FOLLOW_UP_DEPTH:]
    # A question that is no follow-up is read on its own: the chain starts at the last such one.
    starts = [i for i, question in enumerate(window) if not _is_follow_up(question, zone, now)]
    intent: Intent | None = None
    for question in window[starts[-1] if starts else 0 :]:
        found = cubes
        if request.search_model is not None:
            meta = await request.search_model(question)
            found = _ordered(meta, whole) if "error" not in meta else cubes
        outcome = await understand(
            question, found, lookup, zone=zone, now=now, previous=intent, suggest=False, dates_set=dates_set
        )
        intent = outcome if isinstance(outcome, Intent) else None
    return intent


async def _whole_model(request: ProviderRequest) -> list[Cube] | None:
    """Every cube and view the viewer may see (the model search without words, so with the viewer's policies), read
    once per turn; None when the request offers no model search."""
    if request.search_model is None:
        return None
    everything = await request.search_model("")
    return None if "error" in everything else cubes_of(everything)


def _ordered(meta: dict[str, Any], whole: list[Cube] | None) -> list[Cube]:
    """The whole model, the cubes a question's search found first, in its order: a word the search does not know
    ("orders" for the model's "Transactions") may name a cube it left out, and a lexicon entry holds only when the
    whole model says so; without the whole model, what the search found."""
    if whole is None:
        return cubes_of(meta)
    rank = {cube["name"]: i for i, cube in enumerate(meta.get("cubes", []))}
    return sorted(whole, key=lambda cube: rank.get(cube.name, len(rank)))


def _is_follow_up(question: str, zone: ZoneInfo, now: datetime) -> bool:
    reading = read(question, zone=zone, now=now)
    return not isinstance(reading, Decline) and reading.follow_up


def _remembered(lookup: ValueLookup) -> ValueLookup:
    """``lookup``, asking the data once per dimension and candidate in a turn: reading a question against each
    cube and view, and the thread's earlier questions again, asks for the same values many times."""
    known: dict[str, dict[str, list[str]]] = {}  # dimension -> candidate (lowercased) -> values equal to it

    async def remembered(cube: str, dimension: str, candidates: Sequence[str]) -> list[str]:
        seen = known.setdefault(dimension, {})
        missing = sorted({c.lower() for c in candidates} - seen.keys())
        if missing:
            found = await lookup(cube, dimension, missing)
            for candidate in missing:
                seen[candidate] = [value for value in found if value_key(value) == value_key(candidate)]
        return list(dict.fromkeys(value for c in candidates for value in seen[c.lower()]))

    return remembered


def _remembered_dates(dates_set: DateCoverage | None) -> DateCoverage | None:
    """``dates_set``, asking the data once per measure and date in a turn."""
    if dates_set is None:
        return None
    known: dict[tuple[str, str, str, bool], bool] = {}

    async def remembered(cube: str, measure: str, dimension: str, zero_is_none: bool) -> bool:
        key = (cube, measure, dimension, zero_is_none)
        if key not in known:
            known[key] = await dates_set(cube, measure, dimension, zero_is_none)
        return known[key]

    return remembered


async def _no_values(_cube: str, _dimension: str, _candidates: Sequence[str]) -> list[str]:
    return []


def chunks(text: str, parts: int) -> list[str]:
    """``text`` cut at spaces into at most ``parts`` pieces that join back to it."""
    words = text.split(" ")
    size = max(1, -(-len(words) // parts))
    pieces = [" ".join(words[i : i + size]) for i in range(0, len(words), size)]
    return [piece + (" " if index < len(pieces) - 1 else "") for index, piece in enumerate(pieces)]
