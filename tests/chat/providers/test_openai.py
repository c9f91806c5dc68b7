"""The OpenAI-compatible provider through the Chat API, against a real local fake chat-completions server."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from embedadmin.chat import events, services
from embedadmin.chat.models import Run
from embedadmin.chat.providers.openai import SYSTEM_PROMPT, reader_note, sse_data
from embedadmin.chat.runtime import agent_provider
from embedadmin.chat.tools import SERVICE_META_PARAMETERS, SERVICE_SQL_API_PARAMETERS, ToolContext, default_tools
from tests.chat.conftest import SESSION, Chat, LiveStream
from tests.chat.providers.fake_openai import FakeOpenAI, Reply, ScriptedCall, answer, chunk, error, sse, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)

MODEL = "gpt-test"
MESSAGE_ID = "1700000000000-message"
ANSWER_ID = f"{MESSAGE_ID}-answer"
META_RESULT = {
    "cubes": [
        {
            "name": "orders",
            "type": "cube",
            "title": "Orders",
            "members": [
                {
                    "name": "orders.count",
                    "title": "Orders Count",
                    "description": "Number of orders",
                    "type": "number",
                    "aggType": "count",
                }
            ],
        }
    ],
    "searchQuery": "orders",
}
SQL_RESULT = {
    "sqlQuery": "SELECT MEASURE(count) FROM orders",
    "queryTitle": "Orders",
    "description": "All orders",
    "userRequest": "How many orders?",
    "schema": [{"name": "count", "column_type": "Int64"}],
    "data": [["42"]],
    "totalRows": 1,
    "uuid": "00000000-0000-0000-0000-000000000042",
}


class RecordingTools:
    """``serviceMeta`` and ``serviceSqlApi`` with fixed results, recording the arguments they ran with."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def registry(self):
        registry = default_tools()
        for name, result in {"serviceMeta": META_RESULT, "serviceSqlApi": SQL_RESULT}.items():
            tool = registry.tools[name]
            registry.register(dataclasses.replace(tool, function=self._recorder(name, result)))
        return registry

    def _recorder(self, name: str, result: dict[str, Any]):
        def function(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
            self.calls.append((name, arguments))
            return result

        return function


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def tools(runtime) -> RecordingTools:
    recording = RecordingTools()
    runtime.tools_for = lambda agent: recording.registry()
    return recording


def _agent_chat(acme, fake: FakeOpenAI, api_key: str) -> Chat:
    agent = services.agent_create(
        account=acme.account,
        deployment=acme.deployment,
        name="LLM analyst",
        provider="openai",
        base_url=fake.url,
        model=MODEL,
        api_key=api_key,
    )
    return Chat(agent=agent, api_key=acme.created.api_key)


@pytest.fixture
def llm_chat(acme, fake, tools) -> Chat:
    """An ``openai`` agent of account A pointing at the fake server, with its key."""
    return _agent_chat(acme, fake, fake.api_key)


def _ask(chat: Chat, question: str = "How many orders?", **extra: Any):
    return chat.stream({"input": question, "messageId": MESSAGE_ID, "sessionSettings": SESSION, **extra})


def _usage(llm_calls: int, input_tokens: int, output_tokens: int) -> dict[str, Any]:
    """The ``usage`` of a ``__usage__`` frame; a model call that failed reports nothing."""
    models = [MODEL] if llm_calls else []
    return events.usage(
        sort=0, models=models, llm_calls=llm_calls, input_tokens=input_tokens, output_tokens=output_tokens
    )["usage"]


def _final(lines: list[dict[str, Any]]) -> dict[str, Any]:
    (final,) = [line for line in lines if line.get("graphPath", [""])[0] == "final"]
    return final


def _tool_frames(lines: list[dict[str, Any]]) -> list[tuple[str, dict[str, str]]]:
    return [(line["id"], line["toolCall"]) for line in lines if "toolCall" in line]


def _error_line(lines: list[dict[str, Any]]) -> str:
    assert [line["id"] for line in lines[-3:]] == ["__state__", "__error__", "__usage__"]
    assert set(lines[-2]) == {"id", "role", "type", "error", "sort"}
    return lines[-2]["error"]


def _with(runtime, **changes: Any) -> None:
    """Make the runtime's ``openai`` agents use a provider with ``changes`` (shorter timeouts, fewer rounds)."""
    runtime.provider_for = lambda agent: dataclasses.replace(agent_provider(agent), **changes)


def test_a_plain_answer_streams_its_deltas_in_order_and_ends_with_the_whole_answer(llm_chat, fake):
    fake.script(
        answer("There were ", "42 orders", " last month.", reasoning=["The user asks ", "for orders."], usage=(120, 17))
    )

    result = _ask(llm_chat)

    assert result.status == 200
    assert result.ids == ["__cutoff__", MESSAGE_ID, *[ANSWER_ID] * 6, "__state__", "__usage__"]
    *deltas, final = result.frames(ANSWER_ID)
    assert [(delta["thinking"], delta["content"], delta["isDelta"]) for delta in deltas] == [
        ("The user asks ", "", True),
        ("for orders.", "", True),
        ("", "There were ", True),
        ("", "42 orders", True),
        ("", " last month.", True),
    ]
    assert final == events.assistant_final(
        message_id=ANSWER_ID,
        sort=deltas[0]["sort"],
        content="There were 42 orders last month.",
        thinking="The user asks for orders.",
    )
    assert result.lines[-1]["usage"] == _usage(1, 120, 17)
    assert Run.objects.get().status == "completed"


def test_requests_carry_the_configured_model_key_tools_and_streaming_options(llm_chat, fake):
    fake.script(answer("Hi."))

    _ask(llm_chat, "Hello?")

    (request,) = fake.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test-right"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["accept"] == "text/event-stream"
    assert request.body == {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "system", "content": reader_note("en-US", "UTC")},
            {"role": "user", "content": "Hello?"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "serviceMeta",
                    "description": "Search the data model for cubes, views, measures and dimensions",
                    "parameters": SERVICE_META_PARAMETERS,
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "serviceSqlApi",
                    "description": "Run a semantic SQL query and return its rows",
                    "parameters": SERVICE_SQL_API_PARAMETERS,
                },
            },
        ],
    }
    assert llm_chat.agent.api_key_encrypted != "sk-test-right"  # stored encrypted, sent in clear


def test_deltas_are_passed_on_as_the_server_sends_them(llm_chat, fake):
    """The model's server sends "one " and then holds the rest until the viewer has read "one ": a provider that
    gathered the deltas until the model's call ended would hold it back, and the server's hold would run out."""
    first_read = threading.Event()
    reply = answer("one ", "two ", "three ", "four")
    held_from = next(i for i, event in enumerate(reply.events) if '"two "' in event)
    fake.script(dataclasses.replace(reply, held_from=held_from, release=first_read))

    async def scenario() -> list[float]:
        live = LiveStream(await llm_chat.apost(llm_chat.stream_url, {"input": "Count", "sessionSettings": SESSION}))
        arrivals = []
        while (line := await live.next()) is not None:
            if line.get("isDelta") and line["content"]:
                arrivals.append(time.monotonic())
                first_read.set()
        return arrivals

    arrivals = asyncio.run(scenario())

    assert fake.holds_timed_out == 0  # "one " reached the viewer while the model was still holding the rest
    assert len(arrivals) == 4
    assert all(later > earlier for earlier, later in itertools.pairwise(arrivals))


def test_a_tool_call_streamed_in_fragments_runs_and_its_result_goes_back_to_the_model(llm_chat, fake, tools):
    arguments = json.dumps({"searchQuery": "orders by status"})
    fake.script(
        tool_calls(ScriptedCall("call_meta_1", "serviceMeta", arguments), fragment_size=3, usage=(30, 9)),
        answer("Orders ", "have a status.", usage=(55, 6)),
    )

    result = _ask(llm_chat, "What about orders?")

    tool_id = f"{MESSAGE_ID}-tool-1"
    assert result.ids == [
        "__cutoff__",
        MESSAGE_ID,
        tool_id,
        tool_id,
        *[ANSWER_ID] * 3,
        "__state__",
        "__usage__",
    ]
    assert tools.calls == [("serviceMeta", {"searchQuery": "orders by status"})]
    call = {"name": "serviceMeta", "input": arguments}
    assert _tool_frames(result.lines) == [(tool_id, call), (tool_id, {**call, "result": json.dumps(META_RESULT)})]
    assert _final(result.lines)["content"] == "Orders have a status."
    first, second = fake.requests
    assert second.body["messages"] == [
        *first.body["messages"],
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_meta_1", "type": "function", "function": {"name": "serviceMeta", "arguments": arguments}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_meta_1", "content": json.dumps(META_RESULT)},
    ]
    assert result.lines[-1]["usage"] == _usage(2, 85, 15)


def test_two_tool_calls_in_one_turn_both_run_in_order_and_both_results_go_back(llm_chat, fake, tools):
    meta_arguments = {"searchQuery": "orders"}
    sql_arguments = {
        "sqlQuery": "SELECT MEASURE(count) FROM orders",
        "queryTitle": "Orders",
        "description": "All orders",
        "userRequest": "How many orders?",
        "vegaSpec": json.dumps({"mark": "bar"}),
    }
    fake.script(
        tool_calls(
            ScriptedCall("call_a", "serviceMeta", json.dumps(meta_arguments)),
            ScriptedCall("call_b", "serviceSqlApi", json.dumps(sql_arguments)),
            fragment_size=5,
            interleave=True,
        ),
        answer("There are 42 orders."),
    )

    result = _ask(llm_chat)

    assert tools.calls == [("serviceMeta", meta_arguments), ("serviceSqlApi", sql_arguments)]
    frames = _tool_frames(result.lines)
    assert [(frame_id, call["name"], "result" in call) for frame_id, call in frames] == [
        (f"{MESSAGE_ID}-tool-1", "serviceMeta", False),
        (f"{MESSAGE_ID}-tool-1", "serviceMeta", True),
        (f"{MESSAGE_ID}-tool-2", "serviceSqlApi", False),
        (f"{MESSAGE_ID}-tool-2", "serviceSqlApi", True),
    ]
    # after the prompt, the reader note and the question
    assistant, meta_result, sql_result = fake.requests[1].body["messages"][3:]
    assert [(call["id"], call["function"]["name"]) for call in assistant["tool_calls"]] == [
        ("call_a", "serviceMeta"),
        ("call_b", "serviceSqlApi"),
    ]
    assert [json.loads(call["function"]["arguments"]) for call in assistant["tool_calls"]] == [
        meta_arguments,
        sql_arguments,
    ]
    assert meta_result == {"role": "tool", "tool_call_id": "call_a", "content": json.dumps(META_RESULT)}
    assert sql_result == {"role": "tool", "tool_call_id": "call_b", "content": json.dumps(SQL_RESULT)}
    assert _final(result.lines)["content"] == "There are 42 orders."


def test_arguments_that_are_not_a_json_object_go_back_as_an_error_without_running_the_tool(llm_chat, fake, tools):
    fake.script(tool_calls(ScriptedCall("call_x", "serviceMeta", '{"searchQuery": "ord')), answer("Sorry."))

    result = _ask(llm_chat)

    assert tools.calls == []
    assert _tool_frames(result.lines) == []
    assert fake.requests[1].body["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_x",
        "content": json.dumps({"error": "The arguments of serviceMeta are not a JSON object"}),
    }
    assert _final(result.lines)["content"] == "Sorry."


def test_the_thread_history_goes_back_to_the_model_with_the_earlier_tool_calls(llm_chat, fake):
    arguments = json.dumps({"searchQuery": "orders"})
    fake.script(tool_calls(ScriptedCall("call_1", "serviceMeta", arguments)), answer("42 orders."), answer("Yes."))
    first = _ask(llm_chat, "How many orders?")

    llm_chat.stream({"input": "Sure?", "chatId": first.chat_id, "sessionSettings": SESSION})

    assert fake.requests[2].body["messages"] == [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "system", "content": reader_note("en-US", "UTC")},
        {"role": "user", "content": "How many orders?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"{MESSAGE_ID}-tool-1",
                    "type": "function",
                    "function": {"name": "serviceMeta", "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": f"{MESSAGE_ID}-tool-1", "content": json.dumps(META_RESULT)},
        {"role": "assistant", "content": "42 orders."},
        {"role": "user", "content": "Sure?"},
    ]


def test_the_last_allowed_round_forbids_tools_and_a_model_that_still_calls_them_ends_in_an_error(
    llm_chat, fake, tools, runtime
):
    _with(runtime, max_tool_rounds=1)
    call = ScriptedCall("call_1", "serviceMeta", json.dumps({"searchQuery": "orders"}))
    fake.script(tool_calls(call, usage=(10, 2)), tool_calls(call, usage=(20, 2)))

    result = _ask(llm_chat)

    assert [request.body.get("tool_choice") for request in fake.requests] == [None, "none"]
    assert len(tools.calls) == 1
    assert _error_line(result.lines) == "The model was still calling tools after its limit of 1 tool rounds"
    assert result.lines[-1]["usage"] == _usage(2, 30, 4)
    assert Run.objects.get().status == "failed"


def test_abort_during_a_slow_stream_ends_within_a_second_and_hangs_up_on_the_server(llm_chat, fake):
    fake.script(answer(*[f"word{i} " for i in range(40)], pause=0.25))

    async def scenario():
        live = LiveStream(await llm_chat.apost(llm_chat.stream_url, {"input": "Long", "sessionSettings": SESSION}))
        chat_id = (await live.next())["state"]["chatId"]
        await live.until(lambda line: line.get("content") == "word1 ")
        started = time.monotonic()
        aborted = await llm_chat.apost(llm_chat.abort_url, {"chatId": chat_id, "sessionSettings": SESSION})
        lines = await live.rest(timeout=2)
        return aborted, lines, time.monotonic() - started

    aborted, lines, elapsed = asyncio.run(scenario())

    assert aborted.status_code == 204
    assert elapsed < 1.0
    assert [line["id"] for line in lines[-3:]] == ["__state__", "__aborted__", "__usage__"]
    streamed = "".join(line["content"] for line in lines if line.get("isDelta"))
    assert streamed.startswith("word0 word1 ")
    (kept,) = [m for m in lines[-3]["state"]["messages"] if m["id"].endswith("-answer")]
    assert kept["content"] == streamed
    assert fake.disconnected.wait(2), "the provider did not close the HTTP stream"
    assert Run.objects.get().status == "aborted"


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (error(500, "The server had an error", "server_error"), "The model provider failed (HTTP 500)"),
        (
            error(429, "Rate limit reached", "rate_limit_exceeded"),
            "The model provider is rate limiting the agent (HTTP 429); try again shortly",
        ),
        (
            Reply(events=[sse(chunk({"content": "Hel"})), 'data: {"choices": [{"delta": \n\n']),
            "The model provider sent a malformed stream",
        ),
        (
            Reply(events=[sse(chunk({"content": "Hel"})), sse({"error": {"message": "Overloaded"}})]),
            "The model provider reported an error: Overloaded",
        ),
        (
            Reply(events=[sse(chunk({"content": "Hel"}))], complete=False),
            "The connection to the model provider failed",
        ),
        (
            Reply(events=[sse(chunk({"content": "Hel"}))]),
            "The model provider's stream ended before the answer was complete",
        ),
    ],
    ids=["500", "429", "malformed", "error-event", "cut", "unfinished"],
)
def test_a_failing_model_server_ends_the_stream_with_an_error_line(llm_chat, fake, reply, message):
    fake.script(reply)

    result = _ask(llm_chat)

    assert result.status == 200
    assert _error_line(result.lines) == message
    assert result.lines[-1]["usage"] == _usage(0, 0, 0)
    assert Run.objects.get().status == "failed"
    # The thread takes the next message.
    fake.script(answer("Back."))
    again = llm_chat.stream({"input": "Again?", "chatId": result.chat_id, "sessionSettings": SESSION})
    assert _final(again.lines)["content"] == "Back."


def test_a_silent_model_server_times_out_into_an_error_line(llm_chat, fake, runtime):
    _with(runtime, read_timeout=0.3)
    fake.script(Reply(events=[sse(chunk({"content": "late"}))], pause=3))

    started = time.monotonic()
    result = _ask(llm_chat)

    assert time.monotonic() - started < 2
    assert _error_line(result.lines) == "The model provider did not answer in time"
    assert Run.objects.get().status == "failed"


def test_an_unreachable_model_server_is_an_error_line(llm_chat, fake):
    fake.stop()  # nothing listens on its port any more

    result = _ask(llm_chat)

    assert _error_line(result.lines) == "The model provider could not be reached"
    assert Run.objects.get().status == "failed"


def test_a_wrong_key_is_sent_as_configured_and_rejected_cleanly(acme, fake, tools):
    chat = _agent_chat(acme, fake, "sk-test-wrong")
    fake.script(answer("never sent"))

    result = _ask(chat)

    (request,) = fake.requests
    assert request.headers["authorization"] == "Bearer sk-test-wrong"
    assert _error_line(result.lines) == "The model provider rejected the agent's API key (HTTP 401)"
    assert Run.objects.get().status == "failed"


def test_server_sent_events_are_read_as_the_standard_says():
    lines = ["data: one", "", ": keep-alive", "", "event: chunk", "id: 7", "data:two", "data:  three", "", "data: last"]

    async def collect() -> list[str]:
        async def source():
            for line in lines:
                yield line

        return [data async for data in sse_data(source())]

    assert asyncio.run(collect()) == ["one", "two\n three", "last"]


def test_the_model_is_told_the_readers_locale_and_time_zone(llm_chat, fake):
    fake.script(answer("Done."))

    _ask(llm_chat, "Revenue last month?", context={"locale": "de-DE", "timezone": "Europe/Berlin"})

    (request,) = fake.requests
    note = request.body["messages"][1]
    assert note == {"role": "system", "content": reader_note("de-DE", "Europe/Berlin")}
    assert "de-DE locale" in note["content"]
    assert "time zone is Europe/Berlin" in note["content"]
