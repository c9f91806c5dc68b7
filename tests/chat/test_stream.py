"""The stream's frames, their order and shapes (spec 2.17, 4.4, 6), and reading a thread's state."""

from __future__ import annotations

import json

import pytest

from embedadmin.chat.models import ChatUser, Run, Thread, ThreadEvent
from tests.chat.conftest import SESSION

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = "I found nothing in the data model that matches your question."


def test_a_question_streams_every_frame_in_order(chat):
    result = chat.stream(
        {"input": "How many orders?", "messageId": "1700000000000-message", "sessionSettings": SESSION}
    )

    assert result.status == 200
    assert result.content_type == "application/json"
    answer, tool = "1700000000000-message-answer", "1700000000000-message-tool-1"
    assert result.ids == [
        "__cutoff__",
        "1700000000000-message",
        answer,  # thinking delta
        tool,  # tool call in process
        tool,  # tool result
        answer,
        answer,
        answer,  # three content deltas
        answer,  # final
        "__state__",
        "__usage__",
    ]
    lines = result.lines
    chat_id = lines[0]["state"]["chatId"]
    assert lines[0] == {
        "id": "__cutoff__",
        "role": "assistant",
        "sort": 0,
        "state": {"chatId": chat_id, "isStreaming": True},
    }
    assert lines[1] == {
        "id": "1700000000000-message",
        "role": "user",
        "content": "How many orders?",
        "isDelta": False,
        "isInProcess": False,
        "isStructuredResponse": False,
        "sort": 1,
    }
    assert lines[2] == {
        "id": answer,
        "role": "assistant",
        "content": "",
        "thinking": "Searching the data model for: How many orders?",
        "graphPath": ["service_data_analyst_agent"],
        "isDelta": True,
        "isInProcess": True,
        "isStructuredResponse": False,
        "sort": 2,
    }
    call = {"name": "serviceMeta", "input": json.dumps({"searchQuery": "How many orders?"})}
    assert lines[3] == {
        "id": tool,
        "role": "assistant",
        "content": "",
        "toolCall": call,
        "graphPath": ["service_data_analyst_agent", "tools"],
        "isDelta": False,
        "isInProcess": True,
        "isStructuredResponse": False,
        "sort": 3,
    }
    assert lines[4] == {
        **lines[3],
        "toolCall": {**call, "result": lines[4]["toolCall"]["result"]},
        "isInProcess": False,
    }
    assert json.loads(lines[4]["toolCall"]["result"]) == {"cubes": [], "searchQuery": "How many orders?"}
    deltas = lines[5:8]
    assert all(d["isDelta"] and d["isInProcess"] and d["thinking"] == "" and d["sort"] == 2 for d in deltas)
    assert "".join(d["content"] for d in deltas) == ANSWER
    assert all(d["content"] for d in deltas)
    final = lines[8]
    assert final == {
        "id": answer,
        "role": "assistant",
        "content": ANSWER,
        "thinking": "Searching the data model for: How many orders?",
        "graphPath": ["final", "service_data_analyst_agent"],
        "isDelta": False,
        "isInProcess": False,
        "isStructuredResponse": False,
        "sort": 2,
    }
    state = lines[9]
    assert state["sort"] == 9
    assert state["state"]["isStreaming"] is False
    assert [(m["id"], m["role"], m["sort"]) for m in state["state"]["messages"]] == [
        ("1700000000000-message", "user", 1),
        (answer, "assistant", 2),
        (tool, "assistant", 3),
    ]
    assert state["state"]["messages"][1] == {**final, "isDelta": False}
    assert state["state"]["messages"][2] == {**lines[4], "isDelta": False}
    assert lines[10] == {
        "id": "__usage__",
        "type": "usage",
        "sort": 10,
        "usage": {
            "models": [],
            "llmCalls": 0,
            "inputTokens": 0,
            "outputTokens": 0,
            "cacheWriteTokens": 0,
            "cacheReadTokens": 0,
            "totalTokens": 0,
        },
    }
    assert all("sort" in line for line in lines)
    # Final answer per spec 4.4: the last assistant message with graphPath[0] == "final" and length <= 2.
    finals = [m for m in lines if m.get("role") == "assistant" and (m.get("graphPath") or [""])[0] == "final"]
    assert finals[-1]["content"] == ANSWER
    run = Run.objects.get()
    assert run.status == "completed"
    assert run.message_id == "1700000000000-message"
    assert ThreadEvent.objects.count() == 10  # every frame but __cutoff__


def test_each_line_is_sent_as_its_own_chunk(chat):
    result = chat.ask()

    assert result.raw.count(b"\n") == len(result.lines) == 11


def test_a_second_question_continues_the_thread_with_its_history(chat):
    first = chat.ask("How many orders?")

    second = chat.stream({"input": "And customers?", "chatId": first.chat_id, "sessionSettings": SESSION})

    assert second.status == 200
    assert second.chat_id == first.chat_id
    user_echo = second.lines[1]
    assert user_echo["role"] == "user"
    assert user_echo["content"] == "And customers?"
    assert user_echo["sort"] == 11
    messages = second.frames("__state__")[0]["state"]["messages"]
    assert [m["content"] for m in messages if m["role"] == "user"] == ["How many orders?", "And customers?"]
    assert [m["sort"] for m in messages] == sorted(m["sort"] for m in messages)
    assert Thread.objects.count() == 1
    assert Run.objects.filter(status="completed").count() == 2


def test_input_omitted_returns_the_thread_state(chat):
    first = chat.ask()

    state = chat.stream({"chatId": first.chat_id, "sessionSettings": SESSION})

    assert state.status == 200
    assert state.ids == ["__cutoff__", "__state__", "__usage__"]
    assert state.lines[0]["state"] == {"chatId": first.chat_id, "isStreaming": False}
    assert state.lines[1]["state"]["messages"] == first.frames("__state__")[0]["state"]["messages"]
    assert state.lines[1]["sort"] == 11
    assert state.lines[2]["sort"] == 12
    assert Run.objects.count() == 1


def test_a_generated_message_id_has_the_spec_format(chat):
    result = chat.ask()

    echo = result.lines[1]
    assert echo["role"] == "user"
    digits, _, suffix = echo["id"].partition("-")
    assert suffix == "message"
    assert digits.isdigit()
    assert len(digits) >= 13


def test_branch_fields_are_stored_on_the_thread_and_the_run(chat):
    result = chat.ask(activeBranchName="dev-1")

    thread = Thread.objects.get(chat_id=result.chat_id)
    assert (thread.branch_name, thread.is_default_branch) == ("dev-1", False)
    assert Run.objects.get().query_context["branchName"] == "dev-1"
    chat.stream(
        {
            "input": "again",
            "chatId": result.chat_id,
            "activeBranchName": "main",
            "isDefaultBranch": True,
            "sessionSettings": SESSION,
        }
    )
    thread.refresh_from_db()
    assert (thread.branch_name, thread.is_default_branch) == ("main", True)


def test_the_user_is_created_ephemeral_with_the_session_snapshot(chat):
    chat.ask(
        sessionSettings={
            "externalId": " Alice ",
            "email": "a@example.com",
            "groups": ["sales"],
            "securityContext": {"region": "eu"},
        }
    )

    user = ChatUser.objects.get()
    assert user.external_id == "alice"
    assert user.email == "a@example.com"
    assert user.groups == ["sales"]
    assert user.security_context == {"region": "eu"}
    assert user.is_ephemeral is True
    assert Run.objects.get().query_context == {
        "securityContext": {"region": "eu"},
        "groups": ["sales"],
        "userAttributes": {},
        "branchName": "",
        "isDefaultBranch": True,
    }
