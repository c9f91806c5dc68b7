"""The analyst reads the whole model the viewer may see, whatever the search for the question found: a word the
search does not know ("orders" for the model's "Transactions") may name a cube or view it left out."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

from embedadmin.chat.providers.base import CancelToken, ContentDelta, ProviderRequest
from embedadmin.chat.providers.builtin import analyst_stream

NOW = datetime(2025, 8, 20, 9, 0, tzinfo=UTC)
TRAFFIC = {
    "name": "traffic",
    "title": "Site traffic",
    "type": "view",
    "members": [
        {"name": "traffic.txn_cnt", "title": "Transactions", "type": "number", "aggType": "count"},
        {"name": "traffic.evt_ts", "title": "Event time", "type": "time"},
    ],
}
SESSIONS = {
    "name": "sessions",
    "title": "Web sessions",
    "meta": {"synonyms": ["visits"]},
    "members": [{"name": "sessions.count", "title": "Sessions", "type": "number", "aggType": "count"}],
}


def _turn(question: str, *, found: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """The answer and the SQL the analyst ran, when the search for the question finds ``found``."""
    ran: list[str] = []

    async def call_tool(name: str, arguments: dict[str, Any]) -> str:
        if name == "serviceMeta":
            return json.dumps({"cubes": found, "searchQuery": arguments["searchQuery"]})
        ran.append(arguments["sqlQuery"])
        return json.dumps({"error": "not run here"})

    async def search_model(words: str) -> dict[str, Any]:
        return {"cubes": found if words else [TRAFFIC, SESSIONS], "searchQuery": words}

    async def turn() -> str:
        request = ProviderRequest(
            question=question,
            history=[],
            tool_specs=[],
            call_tool=call_tool,
            cancel=CancelToken(),
            search_model=search_model,
        )
        return "".join([e.text async for e in analyst_stream(request, now=NOW) if isinstance(e, ContentDelta)])

    return asyncio.run(turn()), ran


def test_a_view_the_search_left_out_answers_the_words_it_did_not_know():
    answer, ran = _turn("how many orders in 2024?", found=[SESSIONS])

    assert ran == [
        "SELECT MEASURE(txn_cnt) FROM traffic WHERE evt_ts >= DATE '2024-01-01' AND evt_ts < DATE '2025-01-01'"
    ]
    assert "not run here" in answer


def test_without_a_search_of_the_whole_model_the_found_cubes_are_all_it_reads():
    """A provider request with no model search (a caller that gives only the tool) reads what the search found."""
    ran: list[str] = []

    async def call_tool(name: str, arguments: dict[str, Any]) -> str:
        if name == "serviceMeta":
            return json.dumps({"cubes": [SESSIONS]})
        ran.append(arguments["sqlQuery"])
        return json.dumps({"error": "not run here"})

    async def turn() -> str:
        request = ProviderRequest(
            question="how many orders in 2024?", history=[], tool_specs=[], call_tool=call_tool, cancel=CancelToken()
        )
        return "".join([e.text async for e in analyst_stream(request, now=NOW) if isinstance(e, ContentDelta)])

    answer = asyncio.run(turn())

    assert ran == []
    assert "'orders'" in answer
