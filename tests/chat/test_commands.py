"""``manage.py create_agent``."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from embedadmin.chat.models import Agent
from embedadmin.core import credentials


def _run(*args: str) -> dict:
    out = io.StringIO()
    call_command("create_agent", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_create_agent_prints_its_id_and_chat_api_url(acme):
    payload = _run("--account", "acme")

    agent = Agent.objects.get()
    assert payload == {
        "agentId": agent.public_id,
        "chatApiUrl": f"http://127.0.0.1:4000/api/v1/public/acme/agents/{agent.public_id}",
    }
    assert (agent.deployment, agent.provider) == (acme.deployment, "builtin")


def test_an_openai_agent_keeps_its_key_encrypted(acme):
    _run(
        "--account",
        "acme",
        "--provider",
        "openai",
        "--base-url",
        "http://llm:8080/v1",
        "--model",
        "m",
        "--api-key",
        "sk-1",
    )

    agent = Agent.objects.get()
    assert agent.api_key_encrypted != "sk-1"
    assert credentials.decrypt_secret(agent.api_key_encrypted) == "sk-1"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--account", "nosuch"], "Account 'nosuch' not found"),
        (["--account", "acme", "--deployment", "999999"], "No such deployment in this account"),
        (["--account", "acme", "--provider", "openai"], "An OpenAI-compatible agent needs a base URL and a model"),
    ],
)
def test_create_agent_errors(acme, args, message):
    with pytest.raises(CommandError, match=message):
        _run(*args)
    assert Agent.objects.count() == 0
