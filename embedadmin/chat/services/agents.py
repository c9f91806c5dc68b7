"""Agents: who answers on an account's Chat API URL, and with which provider."""

from __future__ import annotations

import secrets

from embedadmin.accounts.models import Account, Deployment
from embedadmin.chat.models import Agent
from embedadmin.core import credentials
from embedadmin.core.errors import BadRequest, NotFound


def agent_create(
    *,
    account: Account,
    deployment: Deployment,
    name: str,
    provider: str = Agent.Provider.BUILTIN,
    base_url: str = "",
    model: str = "",
    api_key: str = "",
) -> Agent:
    """Create an agent of ``account`` over ``deployment``; its ``agentId`` is random and public."""
    if deployment.account_id != account.pk:
        raise NotFound(f"Deployment {deployment.pk} not found")
    if provider not in Agent.Provider.values:
        raise BadRequest(f"provider must be one of {', '.join(Agent.Provider.values)}")
    if provider == Agent.Provider.OPENAI and not (base_url and model):
        raise BadRequest("An OpenAI-compatible agent needs a base URL and a model")
    return Agent.objects.create(
        account=account,
        deployment=deployment,
        name=name.strip() or "Analyst",
        public_id=secrets.token_hex(8),
        provider=provider,
        base_url=base_url,
        model=model,
        api_key_encrypted=credentials.encrypt_secret(api_key) if api_key else "",
    )


def agent_api_key(*, agent: Agent) -> str:
    """The agent's provider API key in clear ('' when none)."""
    return credentials.decrypt_secret(agent.api_key_encrypted) if agent.api_key_encrypted else ""
