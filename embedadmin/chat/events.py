"""The frames of a chat stream (spec 2.17 and 6) and the consolidation of a thread's log into messages.

Every frame a run produces is a JSON object appended to the thread's event log; its ``sort`` is the
log sequence number of the message's first frame, so deltas of one message share a ``sort`` and
messages sort in the order they started. ``__cutoff__`` is not logged (each response builds its own,
sort 0); ``__state__`` is logged as a marker and filled with the thread's messages when sent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

AGENT_NODE = "service_data_analyst_agent"
AGENT_PATH = [AGENT_NODE]
TOOLS_PATH = [AGENT_NODE, "tools"]
FINAL_PATH = ["final", AGENT_NODE]

CUTOFF_ID = "__cutoff__"
STATE_ID = "__state__"
ABORTED_ID = "__aborted__"
USAGE_ID = "__usage__"
ERROR_ID = "__error__"

Frame = dict[str, Any]


def cutoff(*, chat_id: str, is_streaming: bool) -> Frame:
    """The first frame of every response: which thread, and whether a run is streaming into it."""
    return {"id": CUTOFF_ID, "role": "assistant", "sort": 0, "state": {"chatId": chat_id, "isStreaming": is_streaming}}


def user_message(*, message_id: str, content: str, sort: int) -> Frame:
    return {
        "id": message_id,
        "role": "user",
        "content": content,
        "isDelta": False,
        "isInProcess": False,
        "isStructuredResponse": False,
        "sort": sort,
    }


def assistant_delta(*, message_id: str, sort: int, content: str = "", thinking: str = "") -> Frame:
    """A piece of the answer being written: append ``content`` and ``thinking`` to the message ``id``."""
    return {
        "id": message_id,
        "role": "assistant",
        "content": content,
        "thinking": thinking,
        "graphPath": AGENT_PATH,
        "isDelta": True,
        "isInProcess": True,
        "isStructuredResponse": False,
        "sort": sort,
    }


def assistant_final(
    *, message_id: str, sort: int, content: str, thinking: str, suggestions: Sequence[str] = ()
) -> Frame:
    """The whole answer, replacing its deltas (same ``id``); ``graphPath[0] == "final"`` marks it. A declined
    question's ``suggestions`` (questions the agent answers instead) are listed when there are any."""
    frame: Frame = {
        "id": message_id,
        "role": "assistant",
        "content": content,
        "thinking": thinking,
        "graphPath": FINAL_PATH,
        "isDelta": False,
        "isInProcess": False,
        "isStructuredResponse": False,
        "sort": sort,
    }
    if suggestions:
        frame["suggestions"] = list(suggestions)
    return frame


def tool_call(*, message_id: str, sort: int, name: str, input_json: str, result_json: str | None = None) -> Frame:
    """A tool call: in process without ``result``; sent again with the same ``id`` once it has one."""
    call: dict[str, str] = {"name": name, "input": input_json}
    if result_json is not None:
        call["result"] = result_json
    return {
        "id": message_id,
        "role": "assistant",
        "content": "",
        "toolCall": call,
        "graphPath": TOOLS_PATH,
        "isDelta": False,
        "isInProcess": result_json is None,
        "isStructuredResponse": False,
        "sort": sort,
    }


def state_marker(*, sort: int) -> Frame:
    """Logged where ``__state__`` goes; :func:`state` fills in the messages when it is sent."""
    return {"id": STATE_ID, "role": "assistant", "sort": sort}


def state(*, sort: int, messages: list[Frame], is_streaming: bool = False) -> Frame:
    return {
        "id": STATE_ID,
        "role": "assistant",
        "sort": sort,
        "state": {"messages": messages, "isStreaming": is_streaming},
    }


def aborted(*, sort: int) -> Frame:
    return {"id": ABORTED_ID, "role": "assistant", "type": "abort", "code": "chat_aborted", "sort": sort}


def error(*, sort: int, message: str) -> Frame:
    """A run failed after the response started: the HTTP status stays 200, this line says why."""
    return {"id": ERROR_ID, "role": "assistant", "type": "error", "error": message, "sort": sort}


def usage(
    *, sort: int, models: Iterable[str] = (), llm_calls: int = 0, input_tokens: int = 0, output_tokens: int = 0
) -> Frame:
    """Always the last frame of a run, whatever its outcome (zeros for the built-in agent)."""
    return {
        "id": USAGE_ID,
        "type": "usage",
        "sort": sort,
        "usage": {
            "models": sorted(set(models)),
            "llmCalls": llm_calls,
            "inputTokens": input_tokens,
            "outputTokens": output_tokens,
            "cacheWriteTokens": 0,
            "cacheReadTokens": 0,
            "totalTokens": input_tokens + output_tokens,
        },
    }


def is_conversation_message(frame: Frame) -> bool:
    """Whether a frame belongs to a message of the conversation (not a control frame)."""
    message_id = frame.get("id")
    return isinstance(message_id, str) and not message_id.startswith("__")


def consolidate(frames: Iterable[Frame]) -> list[Frame]:
    """The messages of a thread from its frames in log order: deltas appended, later full frames
    replacing earlier ones, each message keeping the ``sort`` of its first frame."""
    messages: dict[str, Frame] = {}
    for frame in frames:
        if not is_conversation_message(frame):
            continue
        current = messages.get(frame["id"])
        if current is None:
            current = messages[frame["id"]] = {**frame, "isDelta": False}
        elif frame.get("isDelta"):
            current["content"] = current.get("content", "") + frame.get("content", "")
            current["thinking"] = current.get("thinking", "") + frame.get("thinking", "")
            current["isInProcess"] = frame.get("isInProcess", False)
        else:
            current.update({**frame, "sort": current["sort"], "isDelta": False})
    return sorted(messages.values(), key=lambda message: message["sort"])
