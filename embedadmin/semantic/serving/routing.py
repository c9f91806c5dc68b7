"""Which deployment a Core Data API request is for, and who is asking.

The routing rule (documented in ``docs/core-data-api.md``):

1. ``/d/{deploymentId}{base_path}/v1/...`` names the deployment in the path, so one server can serve
   every deployment to Cube's client: ``new CubeApi(token, {apiUrl: "http://host:4000/d/7/cubejs-api/v1"})``.
   An unknown id is 404.
2. ``{base_path}/v1/...`` (no prefix, as a stock Cube install is reached) goes to
   ``SEMANTIC["DEFAULT_DEPLOYMENT_ID"]`` when that is set; otherwise to the only deployment with a data model
   configured, when there is exactly one; otherwise the request is a 404 that says how to name one.

Then the token is verified for that deployment (:mod:`embedadmin.semantic.serving.auth`). A missing token is 403
``Authorization header isn't set`` and any token that fails verification is 403 ``Invalid token`` (Cube's
messages; the reason is logged), except the JWKS messages Cube also shows as they are.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from embedadmin.accounts.models import Deployment
from embedadmin.accounts.selectors import deployment_by_id, modelled_deployments
from embedadmin.accounts.services import CREDENTIALS
from embedadmin.accounts.tokens import LEEWAY_SECONDS, TokenInvalid
from embedadmin.core.errors import Forbidden, NotFound
from embedadmin.core.versions import ProcessMemory
from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.serving.auth import (
    PublicTokenInvalid,
    SecurityContext,
    authorization_token,
    core_token_verify,
    is_embed_viewer,
)

logger = logging.getLogger(__name__)

INVALID_TOKEN = "Invalid token"


@dataclass(frozen=True)
class CoreApiCaller:
    """A verified Core Data API request: the deployment it is for and the caller as policies see them."""

    deployment: Deployment
    ctx: QueryContext
    security: SecurityContext

    def require_scope(self, scope: str) -> None:
        """403 ``API scope is missing: <scope>`` (Cube's answer) when the token may not use ``scope``."""
        if not self.security.allows(scope):
            raise Forbidden(f"API scope is missing: {scope}")


def query_context(security: SecurityContext, *, deployment: Deployment) -> QueryContext:
    """The query context of a verified token: the payload as ``securityContext``, its ``groups`` claim as
    groups and its ``userAttributes`` claim as user attributes (embed tokens carry both)."""
    return viewer_context(
        deployment=deployment,
        security_context=security.payload,
        groups=list(security.groups),
        user_attributes=security.user_attributes,
    )


def viewer_context(
    *, deployment: Deployment, security_context: dict[str, Any], groups: list[str], user_attributes: dict[str, Any]
) -> QueryContext:
    """The one rule of who reads only what was granted: an embed viewer (the security context carries the embed
    claim), unless the deployment opens cubes and views without policy to embed viewers. Every door builds its
    query context here: the Core Data API, the embed pages and the chat's runs."""
    return QueryContext(
        security_context=security_context,
        groups=groups,
        user_attributes=user_attributes,
        only_granted=is_embed_viewer(security_context) and not deployment.open_to_embed_without_policy,
    )


def deployment_resolve(*, deployment_id: int | None) -> Deployment:
    """The deployment a request is for, by the rule in the module docstring; :class:`NotFound` otherwise."""
    if deployment_id is not None:
        deployment = deployment_by_id(deployment_id=deployment_id)
        if deployment is None:
            raise NotFound(f"Deployment {deployment_id} not found")
        return deployment
    default_id = settings.SEMANTIC["DEFAULT_DEPLOYMENT_ID"]
    if default_id:
        deployment = deployment_by_id(deployment_id=default_id)
        if deployment is None:
            raise NotFound(f"The default deployment {default_id} (DEFAULT_DEPLOYMENT_ID) does not exist")
        return deployment
    candidates = modelled_deployments()
    if len(candidates) == 1:
        return candidates[0]
    raise NotFound(
        "No deployment is named by this URL: use /d/{deploymentId}"
        f"{settings.CUBEJS_BASE_PATH}/v1/..., or set DEFAULT_DEPLOYMENT_ID"
    )


def _public_message(exc: TokenInvalid) -> str:
    return str(exc) if isinstance(exc, PublicTokenInvalid) else INVALID_TOKEN


# Callers verified in this process, by the URL's deployment id (and the default) and the token, until it expires:
# valid under the CREDENTIALS version (deployments, their secrets, revocations; core/versions.py).
_REMEMBERED_CALLERS: ProcessMemory[CoreApiCaller] = ProcessMemory()


def core_api_caller(*, deployment_id: int | None, headers: Mapping[str, str]) -> CoreApiCaller:
    """Route a request to its deployment and verify its token: :class:`NotFound` or :class:`Forbidden`.

    A caller once verified is remembered until its token expires, as long as nothing it was verified against
    changes: a repeated request reads no database row."""
    refusal: TokenInvalid | None = None
    try:
        token = authorization_token(
            authorization=headers.get("Authorization"), cube_authorization=headers.get("x-cube-authorization")
        )
    except PublicTokenInvalid as missing:  # refused once the deployment is known: an unknown one is a 404 first
        token, refusal = "", missing
    version = CREDENTIALS.current()
    key = (deployment_id, settings.SEMANTIC["DEFAULT_DEPLOYMENT_ID"], token)
    known = _REMEMBERED_CALLERS.get(key, version) if token else None
    if known is not None:
        return known
    deployment = deployment_resolve(deployment_id=deployment_id)
    try:
        if refusal is not None:
            raise refusal
        security = core_token_verify(deployment=deployment, token=token)
    except TokenInvalid as exc:
        logger.info("Core Data API token refused for deployment %s: %s", deployment.pk, exc)
        raise Forbidden(_public_message(exc)) from None
    caller = CoreApiCaller(deployment=deployment, ctx=query_context(security, deployment=deployment), security=security)
    with contextlib.suppress(TypeError, ValueError):  # exp is required and verified: PyJWT reads it with int()
        expires_at = int(security.payload["exp"]) + LEEWAY_SECONDS
        _REMEMBERED_CALLERS.put(key, caller, version, expires_at=expires_at)
    return caller
