"""The embed token: its seal, its verification and the caller it names (docs/dashboards.md "The seal").

An embed token is made in one place (``services.session_exchange``, from an admin-minted session) and verified in
one place (:func:`embed_token_verify`): the embed pages and their endpoints, the session-context endpoint and the
Chat API's ``Embed-Token`` scheme all come here. What the token may see of a dashboard is the dashboards room's
gate (``dashboards.access.embed_dashboard``), which takes its verified claims.
"""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass
from typing import Any

import jwt
from django.utils.crypto import salted_hmac

from embedadmin.accounts.models import Deployment
from embedadmin.accounts.selectors import deployment_by_id
from embedadmin.accounts.tokens import TokenInvalid
from embedadmin.core.edge.authorization import EMBED_TOKEN, CredentialRefused, Scheme, expected, presented_credential
from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.serving.auth import SecurityContext, core_token_verify
from embedadmin.semantic.serving.routing import query_context

_SEAL_SALT = "embedadmin.embed-token.seal"


def _embed_claim(claims: dict[str, Any]) -> dict[str, Any]:
    """The ``embed`` claim of a token's payload (an empty one when it has none)."""
    embed = claims.get("embed")
    return embed if isinstance(embed, dict) else {}


def _sealed_content(payload: dict[str, Any]) -> str:
    """What the seal covers: every claim of the token (its tenant, settings, groups, attributes, security context
    and expiry) but the seal itself and the two the signer adds on its own (``iat``, ``aud``), canonically."""
    body = {key: value for key, value in payload.items() if key not in ("iat", "aud")}
    embed = dict(_embed_claim(body))
    embed.pop("seal", None)
    body["embed"] = embed
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def embed_token_seal(*, payload: dict[str, Any]) -> str:
    """The mark only this install can put in an embed token's ``embed`` claim: an HMAC keyed by its SECRET_KEY
    over the whole payload (``exp`` included).

    A host holds its deployment's signing secret and may mint any Core Data API token, but not this, nor change
    a claim of a sealed token (another tenant, ``allowAi``, ``allowExport``, a later expiry): so a token that
    carries a valid seal was made by ``session_exchange`` from an admin-minted session, exactly as it was made,
    which is what lets it open the embed endpoints and the Chat API without the deployment's ``chat_token_auth``.
    """
    return salted_hmac(_SEAL_SALT, _sealed_content(payload), algorithm="sha256").hexdigest()


@dataclass(frozen=True)
class EmbedCaller:
    """A verified embed token: its deployment, its payload as a security context, and the query context of it."""

    deployment: Deployment
    security: SecurityContext

    @property
    def claims(self) -> dict[str, Any]:
        return self.security.payload

    @property
    def embed(self) -> dict[str, Any]:
        return _embed_claim(self.claims)

    @property
    def sub(self) -> str:
        return str(self.claims.get("sub", ""))

    @property
    def jti(self) -> str:
        """The token's id: the session it was redeemed from (one token per session)."""
        return str(self.claims.get("jti", ""))

    @property
    def settings(self) -> dict[str, Any]:
        """The session's resolved settings, as signed (``services.EmbedSettings.as_claim``)."""
        value = self.embed.get("settings")
        return value if isinstance(value, dict) else {}

    @property
    def ctx(self) -> QueryContext:
        return query_context(self.security, deployment=self.deployment)


def embed_token_verify(*, token: str) -> EmbedCaller:
    """Verify an embed token exactly as the Core Data API verifies any token of its deployment (signature, expiry,
    revocation), then its seal; :class:`TokenInvalid` otherwise."""
    token = token.strip()
    if not token or not token.isascii() or not token.isprintable():
        raise TokenInvalid("Invalid token")
    try:
        unverified = jwt.decode(token, options={"verify_signature": False})
        deployment_id = unverified["embed"]["deploymentId"]
    except (jwt.PyJWTError, KeyError, TypeError):
        raise TokenInvalid("Not an embed token") from None
    if not isinstance(deployment_id, int) or isinstance(deployment_id, bool):
        raise TokenInvalid("Not an embed token")
    deployment = deployment_by_id(deployment_id=deployment_id)
    if deployment is None:
        raise TokenInvalid("Not an embed token")
    security = core_token_verify(deployment=deployment, token=token)
    embed = _embed_claim(security.payload)
    seal = embed.get("seal")
    try:
        expected = embed_token_seal(payload=security.payload)
    except ValueError:  # a value JSON cannot write canonically (NaN): not a token this install made
        raise TokenInvalid("Not an embed token") from None
    if (
        not isinstance(seal, str)
        or not hmac.compare_digest(seal, expected)
        or embed.get("deploymentId") != deployment.pk
    ):
        raise TokenInvalid("Not an embed token")
    return EmbedCaller(deployment=deployment, security=security)


def embed_caller(authorization: str | None, *, scheme: Scheme = EMBED_TOKEN) -> EmbedCaller:
    """The verified caller of an ``Authorization: <scheme> <embed token>`` header (``Embed-Token``, or ``Bearer`` for
    the session-context endpoint); :class:`TokenInvalid` for any other header or token."""
    try:
        presented = presented_credential(authorization, accept=(scheme,))
    except CredentialRefused as exc:
        raise TokenInvalid(exc.message) from None
    if presented is None:
        raise TokenInvalid(f"Authorization header must be {expected((scheme,))}")
    return embed_token_verify(token=presented.value)
