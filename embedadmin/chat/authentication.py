"""Who calls the Chat API (spec 5): an admin API key acting for the account, an embed token, or a deployment token.

``Authorization: Embed-Token <jwt>`` is the token an embed page got by redeeming an admin-minted session: it is
verified as the Core Data API verifies tokens (and must carry the install's seal, so a host cannot mint one),
must be of the agent's deployment, and speaks for its ``sub``; the deployment's ``chat_token_auth`` is not
needed, the session is the grant. A session whose resolved ``allowAi`` is false gets no chat at all.

``Authorization: Api-Key <key>`` wins when both headers are sent. ``X-Service-Auth-Token: <JWT>`` is
accepted only when the agent's deployment enables it, is verified like a Core Data API token, and must
carry ``externalId`` (else ``sub``; lowercased) and a ``scope`` that includes ``chat``. Failures raise
:class:`ChatAuthError`, which the views render as a JSON-RPC error in an HTTP 200 response.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from embedadmin.accounts.selectors import api_key_authenticate
from embedadmin.accounts.tokens import TokenInvalid
from embedadmin.chat.models import Agent
from embedadmin.core.edge.authorization import (
    API_KEY,
    EMBED_TOKEN,
    CredentialRefused,
    presented_credential,
    token_header,
)
from embedadmin.embedding.tokens import embed_token_verify
from embedadmin.semantic.serving.auth import SecurityContext, core_token_verify

CHAT_SCOPE = "chat"
SERVICE_TOKEN_HEADER = "X-Service-Auth-Token"
AI_NOT_ALLOWED = "AI chat is not allowed for this embed session"


class ChatAuthError(Exception):
    """The request is not authenticated; the message says why (safe to show)."""


@dataclass(frozen=True)
class ChatCredential:
    """An authenticated caller: an admin API key, or a token (its verified security context, and the
    user it names: ``externalId``, else ``sub``, lowercased)."""

    token: SecurityContext | None = None
    token_external_id: str = ""

    @property
    def via_api_key(self) -> bool:
        return self.token is None

    @property
    def token_email(self) -> str | None:
        if self.token is None:
            return None
        email = self.token.payload.get("email")
        embed = self.token.payload.get("embed")
        if email is None and isinstance(embed, dict):
            email = embed.get("email")  # an embed token keeps the viewer's email in its embed claim
        return email if isinstance(email, str) and email else None


def _api_key_credential(*, agent: Agent, key: str) -> ChatCredential:
    caller = api_key_authenticate(key)
    if caller is None or caller.account.pk != agent.account_id:
        raise ChatAuthError("Invalid or revoked API key")
    refusal = caller.admin_refusal("The Chat API") or caller.scope_refusal(agent.deployment_id)
    if refusal is not None:
        raise ChatAuthError(refusal)
    return ChatCredential()


def _has_chat_scope(scope: Any) -> bool:
    if isinstance(scope, str):
        return CHAT_SCOPE in scope.split()
    return isinstance(scope, list) and CHAT_SCOPE in scope


def _token_credential(*, agent: Agent, token: str) -> ChatCredential:
    if not agent.deployment.chat_token_auth:
        raise ChatAuthError("Token authentication is not enabled for this deployment's Chat API")
    try:
        context = core_token_verify(deployment=agent.deployment, token=token)
    except TokenInvalid as exc:
        raise ChatAuthError(str(exc)) from None
    identity = context.payload.get("externalId") or context.payload.get("sub")
    if not isinstance(identity, str) or not identity.strip():
        raise ChatAuthError("The token has neither an externalId nor a sub claim")
    if not _has_chat_scope(context.payload.get("scope")):
        raise ChatAuthError("The token's scope does not include 'chat'")
    if not context.allows("data"):  # the agent queries the data with this token (a meta-sync token may not)
        raise ChatAuthError("API scope is missing: data")
    return ChatCredential(token=context, token_external_id=identity.strip().lower())


def _embed_token_credential(*, agent: Agent, token: str) -> ChatCredential:
    try:
        caller = embed_token_verify(token=token)
    except TokenInvalid as exc:
        raise ChatAuthError(str(exc)) from None
    if caller.deployment.pk != agent.deployment_id:
        raise ChatAuthError(f"This embed token is not valid for deployment {agent.deployment_id}")
    if caller.settings.get("allowAi") is not True:
        raise ChatAuthError(AI_NOT_ALLOWED)
    if caller.embed.get("internalId") is not None:
        # The Chat API's users are external users or internal users named by an API key's sessionSettings; an
        # internal user's embed session would otherwise become an external user of the same name.
        raise ChatAuthError("AI chat is not available to an internal user's embed session")
    if not caller.sub.strip():
        raise ChatAuthError("The token has no sub claim")
    return ChatCredential(token=caller.security, token_external_id=caller.sub.strip().lower())


def chat_authenticate(*, agent: Agent, headers: Mapping[str, str]) -> ChatCredential:
    """Authenticate a Chat API request from its headers (case-insensitive, as ``request.headers``)."""
    try:
        presented = presented_credential(headers.get("Authorization"), accept=(API_KEY, EMBED_TOKEN))
        service_token = (
            None if presented else token_header(headers.get(SERVICE_TOKEN_HEADER), header=SERVICE_TOKEN_HEADER)
        )
    except CredentialRefused as exc:
        raise ChatAuthError(exc.message) from None
    if presented is not None and presented.scheme is EMBED_TOKEN:
        return _embed_token_credential(agent=agent, token=presented.value)
    if presented is not None:
        return _api_key_credential(agent=agent, key=presented.value)
    if service_token is not None:
        return _token_credential(agent=agent, token=service_token)
    raise ChatAuthError(
        "Missing credentials: send 'Authorization: Api-Key <key>', 'Authorization: Embed-Token <token>' "
        f"or '{SERVICE_TOKEN_HEADER}: <token>'"
    )
