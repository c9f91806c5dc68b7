"""Agent providers: what writes an answer, behind one interface (:mod:`.base`).

By ``Agent.provider``: ``builtin``, the offline and deterministic analyst (:mod:`.builtin`), and
``openai``, any OpenAI-compatible chat-completions endpoint (:mod:`.openai`). A provider is given what
it needs by its caller (the agent's settings and its API key in clear) and reads no secret itself.
"""

from __future__ import annotations

from typing import Protocol

from embedadmin.chat.models import Agent
from embedadmin.chat.providers.base import Provider, ProviderUnavailable
from embedadmin.chat.providers.builtin import BuiltinProvider
from embedadmin.chat.providers.openai import openai_provider_for


class ProviderFactory(Protocol):
    def __call__(self, agent: Agent, *, api_key: str) -> Provider: ...


PROVIDER_FACTORIES: dict[str, ProviderFactory] = {
    Agent.Provider.BUILTIN: lambda agent, *, api_key: BuiltinProvider(),
    Agent.Provider.OPENAI: openai_provider_for,
}


def provider_for(agent: Agent, *, api_key: str) -> Provider:
    """The provider of ``agent``, with ``api_key`` its key in clear ('' when it has none)."""
    factory = PROVIDER_FACTORIES.get(agent.provider)
    if factory is None:
        raise ProviderUnavailable(f"The {agent.get_provider_display()} provider is not available on this server")
    return factory(agent, api_key=api_key)
